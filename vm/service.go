package vm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/epochs"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// Handler serves the JSON-RPC API (package api) at /ext/bc/<chainID>,
// behind the access control and limits of the node's chain config
// (access.go).
func (vm *VM) Handler() (http.Handler, error) {
	if vm.gate == nil {
		return nil, ErrNotInitialized
	}
	server := rpc.NewServer()
	codec := apiCodec{Codec: avajson.NewCodec(), gate: vm.gate}
	server.RegisterCodec(codec, "application/json")
	server.RegisterCodec(codec, "application/json;charset=UTF-8")
	if err := server.RegisterService(&Service{vm: vm}, api.Service); err != nil {
		return nil, err
	}
	return apiHandler{gate: vm.gate, next: server}, nil
}

// Service implements the api methods. Reads see accepted state only.
type Service struct{ vm *VM }

// Allocate group-commits one allocation of a range this node owns.
func (s *Service) Allocate(r *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	l := s.vm.genesis.TxLimits
	if err := txs.VerifyRange(args.Range, l); err != nil {
		return s.invalidParams(r, err)
	}
	if args.Count == 0 || args.Count > l.MaxCount {
		return s.invalidParams(r, fmt.Errorf("count %d not in [1, %d]", args.Count, l.MaxCount))
	}
	if args.Floor > math.MaxUint64-args.Count {
		return s.invalidParams(r, fmt.Errorf("floor %d + count %d overflows 64 bits", args.Floor, args.Count))
	}
	if args.Pooled {
		if args.Floor != 0 {
			return s.invalidParams(r, errors.New("a pooled allocation takes no floor (allocate with a floor without pooling)"))
		}
		p, err := s.vm.AllocatePooled(r.Context(), args.Range, args.Count)
		if errors.Is(err, errInvalidPooled) {
			return s.invalidParams(r, err)
		}
		if err != nil {
			return rpcError(err)
		}
		*reply = api.AllocateReply{TxID: p.TxID, Index: p.Index, Owner: s.vm.cfg.NodeID, Pooled: true, Base: p.Base, Count: p.Count}
		return nil
	}
	sub, err := s.vm.AllocateOne(r.Context(), txs.AllocateEntry{Range: args.Range, Count: args.Count, Floor: args.Floor})
	if err != nil {
		return rpcError(err)
	}
	*reply = api.AllocateReply{TxID: sub.TxID, Index: sub.Index, Epoch: sub.Epoch, Owner: sub.Owner}
	if args.Wait {
		rc, err := s.wait(r.Context(), sub.TxID, args.WaitMs)
		if err != nil {
			return err
		}
		reply.Receipt = rc
	}
	return nil
}

// PutManifest commits one manifest of a bucket this node owns.
func (s *Service) PutManifest(r *http.Request, args *api.PutManifestArgs, reply *api.PutManifestReply) error {
	m := txs.Manifest{Bucket: args.Bucket, Key: args.Key, Size: args.Size, ContentHash: args.ContentHash, Chunks: args.Chunks, Deleted: args.Deleted}
	if err := m.Verify(s.vm.genesis.TxLimits); err != nil {
		return s.invalidParams(r, err)
	}
	tx, err := s.vm.PutManifest(r.Context(), m)
	if err != nil {
		return rpcError(err)
	}
	h := tx.Unsigned.Head()
	*reply = api.PutManifestReply{TxID: tx.ID(), Epoch: h.Epoch, Owner: h.Owner}
	if args.Wait {
		rc, err := s.wait(r.Context(), tx.ID(), args.WaitMs)
		if err != nil {
			return err
		}
		reply.Receipt = rc
	}
	return nil
}

// wait waits for a write's receipt for at most min(waitMs, the chain
// config's maxWaitMs, the genesis maxWaitMs); waitMs 0 means no bound of the
// caller's own. A timeout names the transaction, so the caller polls it
// instead of signing a second one.
func (s *Service) wait(ctx context.Context, txID ids.ID, waitMs uint64) (*api.ReceiptReply, error) {
	bound := min(s.vm.gate.cfg.MaxWait(), s.vm.genesis.MaxWait())
	// Compared in milliseconds: a waitMs beyond what a Duration holds
	// must mean the node's bound, not overflow into a negative wait.
	if waitMs > 0 && waitMs < uint64(bound/time.Millisecond) {
		bound = time.Duration(waitMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	rc, err := s.vm.WaitReceipt(ctx, txID)
	if errors.Is(err, ErrWaitTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return nil, &json2.Error{
			Code:    api.CodeTimeout,
			Message: fmt.Sprintf("%v (wait bound %v = min(waitMs, maxWaitMs); poll getReceipt, do not resend)", err, bound),
			Data:    api.TimeoutData{TxID: txID, WaitMs: uint64(bound / time.Millisecond)},
		}
	}
	if err != nil {
		return nil, rpcError(err)
	}
	return rc, nil
}

// invalidParams refuses a write's arguments, counted under its token.
func (s *Service) invalidParams(r *http.Request, err error) error {
	c, _ := callOf(r)
	s.vm.gate.reject(r, "", reasonInvalidParams, c.tokenName())
	return invalidParams(err)
}

// GetReceipt reports a transaction's status.
func (s *Service) GetReceipt(_ *http.Request, args *api.TxIDArgs, reply *api.ReceiptReply) error {
	rc, err := s.vm.Receipt(args.TxID)
	if err != nil {
		return rpcError(err)
	}
	*reply = *rc
	return nil
}

// GetAllocation reads a range's next unissued id.
func (s *Service) GetAllocation(_ *http.Request, args *api.RangeArgs, reply *api.AllocationReply) error {
	if err := txs.VerifyRange(args.Range, s.vm.genesis.TxLimits); err != nil {
		return invalidParams(err)
	}
	next, err := s.vm.State().Counter(args.Range)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.AllocationReply{Range: args.Range, Next: next}
	return nil
}

// GetManifest reads an accepted manifest.
func (s *Service) GetManifest(_ *http.Request, args *api.ManifestArgs, reply *api.ManifestReply) error {
	m, err := s.vm.State().Manifest(args.Bucket, args.Key)
	if errors.Is(err, state.ErrNotFound) {
		return &json2.Error{Code: api.CodeNotFound, Message: err.Error()}
	}
	if err != nil {
		return rpcError(err)
	}
	reply.Manifest = *m
	return nil
}

// GetOwner names a range's owner in this node's current epoch.
func (s *Service) GetOwner(r *http.Request, args *api.RangeArgs, reply *api.OwnerReply) error {
	if err := txs.VerifyRange(args.Range, s.vm.genesis.TxLimits); err != nil {
		return invalidParams(err)
	}
	e, err := s.vm.Snapshot(r.Context())
	if err != nil {
		return rpcError(err)
	}
	*reply = api.OwnerReply{Range: args.Range, Owner: e.Owner(args.Range), Epoch: e.Height(), Fingerprint: e.Fingerprint()}
	return nil
}

// GetEpoch describes this node's current epoch: the members (live
// validators), the whole P-chain set and each validator's liveness record.
func (s *Service) GetEpoch(r *http.Request, _ *api.Empty, reply *api.EpochReply) error {
	e, err := s.vm.Snapshot(r.Context())
	if err != nil {
		return rpcError(err)
	}
	v, err := s.vm.epochs.Get(r.Context(), e.Height())
	if err != nil {
		return rpcError(fmt.Errorf("%w: %w", ErrNotReady, err))
	}
	m := e.Membership()
	*reply = api.EpochReply{
		PChainHeight: e.Height(), Round: m.Round, Fingerprint: e.Fingerprint(),
		Generation: m.Generation, Fallback: m.Fallback,
		EpochDurationMs: s.vm.genesis.EpochDurationMs, LivenessEpochs: s.vm.genesis.LivenessEpochs,
		NodeID: s.vm.cfg.NodeID,
	}
	for _, mb := range e.Members() {
		reply.Members = append(reply.Members, api.Member{NodeID: mb.NodeID, Weight: mb.Weight})
	}
	accepted := s.vm.state.Accepted()
	for _, val := range v.Members() {
		_, member := e.Weight(val.NodeID)
		vl := api.ValidatorLiveness{NodeID: val.NodeID, Weight: val.Weight, Member: member}
		rec, known, err := accepted.Liveness(val.NodeID)
		if err != nil {
			return rpcError(err)
		}
		if known {
			vl.FirstSeen = &rec.FirstSeen
			if rec.HasHeartbeat {
				vl.LastHeartbeat = &rec.Heartbeat
			}
		}
		reply.Validators = append(reply.Validators, vl)
	}
	return nil
}

// GetNode identifies this node and its last accepted block.
func (s *Service) GetNode(_ *http.Request, _ *api.Empty, reply *api.NodeReply) error {
	s.vm.mu.Lock()
	last := s.vm.lastAccepted
	s.vm.mu.Unlock()
	*reply = api.NodeReply{NodeID: s.vm.cfg.NodeID, NetworkID: s.vm.cfg.NetworkID, ChainID: s.vm.cfg.ChainID, Height: last.Block.Height, StateRoot: last.StateRoot}
	return nil
}

// Receipt reports a transaction's status from accepted state, the pending
// pool and processing blocks, and what this node remembers of rejections and
// re-pins.
func (vm *VM) Receipt(txID ids.ID) (*api.ReceiptReply, error) {
	rc, err := vm.State().Receipt(txID)
	switch {
	case err == nil:
		return &api.ReceiptReply{TxID: txID, Status: api.StatusAccepted, Height: rc.Height, Entries: rc.Entries}, nil
	case !errors.Is(err, state.ErrNotFound):
		return nil, err
	}
	if reason, rejected, repl, replaced := vm.tracker.lookup(txID); replaced {
		return &api.ReceiptReply{TxID: txID, Status: api.StatusPending, ReplacedBy: &repl}, nil
	} else if rejected {
		return &api.ReceiptReply{TxID: txID, Status: api.StatusRejected, Error: reason}, nil
	}
	if vm.mempool.Has(txID) || vm.inProcessing(txID) {
		return &api.ReceiptReply{TxID: txID, Status: api.StatusPending}, nil
	}
	return &api.ReceiptReply{TxID: txID, Status: api.StatusUnknown}, nil
}

func (vm *VM) inProcessing(txID ids.ID) bool {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	for _, b := range vm.processing {
		for _, tx := range b.Txs {
			if tx.ID() == txID {
				return true
			}
		}
	}
	return false
}

// ErrWaitTimeout is returned when a wait outlasts the genesis bound.
var ErrWaitTimeout = errors.New("vm: transaction not decided within the wait bound")

// WaitReceipt blocks until txID (or the transaction that replaced it) is
// accepted or rejected, ctx ends, or the genesis wait bound passes.
func (vm *VM) WaitReceipt(ctx context.Context, txID ids.ID) (*api.ReceiptReply, error) {
	ctx, cancel := context.WithTimeout(ctx, vm.genesis.MaxWait())
	defer cancel()
	for {
		changed := vm.tracker.wait()
		rc, err := vm.Receipt(txID)
		if err != nil {
			return nil, err
		}
		switch {
		case rc.ReplacedBy != nil:
			txID = *rc.ReplacedBy
			continue
		case rc.Status == api.StatusAccepted || rc.Status == api.StatusRejected:
			return rc, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s is %s (%w)", ErrWaitTimeout, txID, rc.Status, ctx.Err())
		}
	}
}

func invalidParams(err error) error {
	return &json2.Error{Code: api.CodeInvalidParams, Message: err.Error()}
}

// rpcError maps named errors to the API's stable codes.
func rpcError(err error) error {
	var noe *execute.NotOwnerError
	switch {
	case errors.As(err, &noe):
		return &json2.Error{Code: api.CodeNotOwner, Message: err.Error(), Data: api.NotOwnerData{Range: noe.Range, Owner: noe.Owner, Epoch: noe.Epoch}}
	case errors.Is(err, ErrNotReady), errors.Is(err, epochs.ErrNotReady), errors.Is(err, pinning.ErrEmptySet):
		return &json2.Error{Code: api.CodeNotReady, Message: err.Error(), Data: api.RetryData{RetryAfterMs: 1000}}
	case errors.Is(err, mempool.ErrFull):
		return &json2.Error{Code: api.CodeMempoolFull, Message: err.Error(), Data: api.RetryData{RetryAfterMs: 200}}
	case errors.Is(err, ErrWaitTimeout), errors.Is(err, context.DeadlineExceeded):
		return &json2.Error{Code: api.CodeTimeout, Message: err.Error()}
	case isRuleViolation(err):
		return &json2.Error{Code: api.CodeRejected, Message: err.Error(), Data: api.RejectedData{Reason: ruleName(err)}}
	case errors.Is(err, ErrPoolRefill):
		return &json2.Error{Code: api.CodeNotReady, Message: err.Error(), Data: api.RetryData{RetryAfterMs: 200}}
	default:
		return &json2.Error{Code: api.CodeUnknown, Message: err.Error()}
	}
}

// rules name the chain rules an API caller can break, in a fixed order.
var rules = []struct {
	err  error
	name string
}{
	{execute.ErrUnallocatedChunk, "unallocated_chunk"},
	{execute.ErrCounterOverflow, "counter_overflow"},
	{execute.ErrReplay, "replay"},
	{execute.ErrWrongEpoch, "wrong_epoch"},
	{mempool.ErrDuplicate, "duplicate"},
	{txs.ErrTooLarge, "too_large"},
}

func isRuleViolation(err error) bool { return ruleName(err) != "" }

// reasonOf labels a rejection for metrics.
func reasonOf(err error) string {
	var noe *execute.NotOwnerError
	switch {
	case errors.As(err, &noe):
		return "not_owner"
	case errors.Is(err, txs.ErrBadSignature):
		return "bad_signature"
	case errors.Is(err, execute.ErrWrongFingerprint):
		return "wrong_fingerprint"
	}
	if r := ruleName(err); r != "" {
		return r
	}
	return "other"
}

func ruleName(err error) string {
	for _, r := range rules {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "txs: ") {
		return "invalid_tx"
	}
	return ""
}
