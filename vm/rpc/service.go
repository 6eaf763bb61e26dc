package rpc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"
	"github.com/prometheus/client_golang/prometheus"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/writer"
)

// Writes is the node's write path (package writer).
type Writes interface {
	AllocateOne(ctx context.Context, entry txs.AllocateEntry) (writer.Submitted, error)
	AllocatePooled(ctx context.Context, rangeKey string, count uint64) (writer.Pooled, error)
	PoolHolds(rangeKey string, count uint64) bool
	PutManifest(ctx context.Context, m txs.Manifest) (*txs.Tx, error)
	Lease(ctx context.Context, e txs.LeaseEntry) (*txs.Tx, error)
	LeaseAsked() uint64
	LeaseAnswer(asked uint64, rangeKey string, grant state.Lease, txID ids.ID, blockMs uint64) error
	WriteManifest(ctx context.Context, e txs.ManifestEntry) (writer.Submitted, error)
	Reclaim(ctx context.Context, chunks []txs.ChunkRef) (*txs.Tx, error)
	ManifestsActive() error
	Receipt(txID ids.ID) (*api.ReceiptReply, error)
	WaitReceipt(ctx context.Context, txID ids.ID) (*api.ReceiptReply, error)
}

// Reads is what the read methods need (package chain).
type Reads interface {
	Snapshot(ctx context.Context) (*execute.Membership, error)
	ValidatorSet(ctx context.Context, height uint64) (*execute.ValidatorSet, error)
	State() state.Reader
	LastAccepted() *chain.Block
	AcceptedAt(height uint64) (*block.Block, error)
	ListObjects(q state.ObjectQuery) (*state.ObjectPage, error)
	ListReleased(q state.ReleasedQuery) (*state.ReleasedPage, error)
}

// Finality is the node's finality certificates (package certifier), and
// what their pushed signatures say of the other validators' progress.
type Finality interface {
	Covering(height uint64) (*certificate.Certificate, error)
	WaitFinal(ctx context.Context, height uint64) error
	Peers
}

// Config is what the API needs from its node.
type Config struct {
	NodeID    ids.NodeID
	NetworkID uint32
	ChainID   ids.ID
	Genesis   *config.Genesis
	// ChainConfig is this node's API access control and limits. Nil is only
	// for a VM run in-process (tests, embedding): no token is then
	// required.
	ChainConfig *config.ChainConfig
	Log         logging.Logger
	Registerer  prometheus.Registerer
}

// Server is the JSON-RPC service with its access gate.
type Server struct {
	cfg      Config
	gate     *gate
	fresh    *freshness
	reads    Reads
	writes   Writes
	finality Finality
	handler  http.Handler
	// direct is the plugin's own door to the API (ServeDirect), nil
	// until it is open.
	direct atomic.Pointer[direct]
}

// New serves the JSON-RPC API (package api) behind the access control and
// limits of the node's chain config (access.go).
func New(cfg Config, reads Reads, writes Writes, finality Finality) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = logging.NoLog{}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	g, err := newGate(cfg.ChainConfig, cfg.Log, m)
	if err != nil {
		return nil, err
	}
	srv := &Server{cfg: cfg, gate: g, fresh: &freshness{reads: reads, peers: finality}, reads: reads, writes: writes, finality: finality}
	server := rpc.NewServer()
	codec := apiCodec{Codec: avajson.NewCodec(), gate: g, fresh: srv.fresh}
	server.RegisterCodec(codec, "application/json")
	server.RegisterCodec(codec, "application/json;charset=UTF-8")
	if err := server.RegisterService(&Service{s: srv}, api.Service); err != nil {
		return nil, err
	}
	srv.handler = apiHandler{gate: g, next: server}
	return srv, nil
}

// ServeDirect opens the direct API when the chain config asks for one
// (directAPI); the VM calls it once everything behind the API is up.
func (s *Server) ServeDirect() error {
	cc := s.cfg.ChainConfig
	if cc == nil || cc.DirectAPI == "" {
		return nil
	}
	d, err := s.serveDirect(cc.DirectAPI)
	if err != nil {
		return err
	}
	s.direct.Store(d)
	return nil
}

// SetBootstrapping tells the API whether avalanchego is bootstrapping the
// chain: while it is, every method but getNode answers NotReady
// ("bootstrapping"), since accepted state may be far behind.
func (s *Server) SetBootstrapping(b bool) { s.fresh.bootstrapping.Store(b) }

// Handler serves the API at /ext/bc/<chainID>.
func (s *Server) Handler() http.Handler { return s.handler }

// DirectURI is the base URI of the direct API ("" when off).
func (s *Server) DirectURI() string {
	if d := s.direct.Load(); d != nil {
		return d.uri
	}
	return ""
}

// Close stops the direct API, if any; the node's door closes with the node.
func (s *Server) Close() error {
	if d := s.direct.Swap(nil); d != nil {
		return d.close()
	}
	return nil
}

// Service implements the api methods. Reads see accepted state only.
type Service struct{ s *Server }

// Allocate group-commits one allocation of a range this node owns.
func (s *Service) Allocate(r *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	return s.allocate(r, args, reply)
}

// ErrBadBatch: an allocateBatch call without requests or with more than
// api.MaxBatch.
var ErrBadBatch = errcode.New(errcode.InvalidParams, "bad_batch", "rpc: allocateBatch takes 1 to 256 requests")

// AllocateBatch answers several allocate requests in one call, each as
// allocate would alone. It exists because a pooled allocation costs almost
// nothing in the VM: its price is the exchange (the node's HTTP server and
// the HTTP-over-gRPC hop into the plugin), which a batch pays once. Pooled
// requests their pools can answer are served in order; the others run
// concurrently, so that the owner's group commit signs them as one
// transaction and a reservation holds up only its own range's requests.
func (s *Service) AllocateBatch(r *http.Request, args *api.AllocateBatchArgs, reply *api.AllocateBatchReply) error {
	if n := len(args.Requests); n == 0 || n > api.MaxBatch {
		return s.invalidParams(r, fmt.Errorf("%w: %d requests", ErrBadBatch, n))
	}
	results := make([]api.AllocateResult, len(args.Requests))
	var wg sync.WaitGroup
	for i := range args.Requests {
		one := func() {
			rep := new(api.AllocateReply)
			if err := s.allocate(r, &args.Requests[i], rep); err != nil {
				results[i].Error = batchError(err)
				return
			}
			results[i].Reply = rep
		}
		// A pooled request its pool can answer is served in turn, without
		// a goroutine; one that waits for a reservation (a range's first
		// request, a range that moved here) must not hold the batch's
		// other ranges behind it, so it waits beside them.
		if a := &args.Requests[i]; a.Pooled && s.s.writes.PoolHolds(a.Range, a.Count) {
			one()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			one()
		}()
	}
	wg.Wait()
	reply.Results = results
	return nil
}

// batchError is the error object allocate would have answered with.
func batchError(err error) *api.Error {
	var je *json2.Error
	if errors.As(err, &je) {
		return api.NewError(int(je.Code), je.Message, je.Data)
	}
	code, _ := errcode.Of(err)
	return api.NewError(int(code), err.Error(), nil)
}

func (s *Service) allocate(r *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	if err := s.s.gate.covers(r, args.Range); err != nil {
		return err
	}
	l := s.s.cfg.Genesis.TxLimits
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
		p, err := s.s.writes.AllocatePooled(r.Context(), args.Range, args.Count)
		if errors.Is(err, writer.ErrInvalidPooled) {
			return s.invalidParams(r, err)
		}
		if err != nil {
			return rpcError(err)
		}
		*reply = api.AllocateReply{TxID: api.ID(p.TxID), Index: p.Index, Owner: api.NodeID(s.s.cfg.NodeID), Pooled: true, Base: p.Base, Count: p.Count}
		if args.Wait == api.WaitFinal {
			rc, err := s.wait(r.Context(), p.TxID, p.Index, args.WaitMs, args.Wait)
			if err != nil {
				return err
			}
			if args.OwnEntry {
				keepEntry(rc, p.Index)
			}
			reply.Receipt = rc
		}
		return nil
	}
	sub, err := s.s.writes.AllocateOne(r.Context(), txs.AllocateEntry{Range: args.Range, Count: args.Count, Floor: args.Floor})
	if err != nil {
		return rpcError(err)
	}
	*reply = api.AllocateReply{TxID: api.ID(sub.TxID), Index: sub.Index, PChainHeight: sub.PChainHeight, Owner: api.NodeID(sub.Owner)}
	if args.Wait.Waits() {
		rc, err := s.wait(r.Context(), sub.TxID, sub.Index, args.WaitMs, args.Wait)
		if err != nil {
			return err
		}
		if args.OwnEntry {
			keepEntry(rc, sub.Index)
		}
		reply.Receipt = rc
	}
	return nil
}

// keepEntry leaves in an accepted receipt only the entry at index, for a
// write that asked for its own entry (api.ReceiptReply.First says why).
func keepEntry(rc *api.ReceiptReply, index int) {
	if e, ok := rc.Entry(index); ok {
		rc.Entries, rc.First = []api.ReceiptEntry{e}, index
	}
}

// PutManifest commits one manifest of a bucket this node owns: a versioned
// write, group-committed, once the manifests upgrade is in force; a
// PutManifestTx of its own before.
func (s *Service) PutManifest(r *http.Request, args *api.PutManifestArgs, reply *api.PutManifestReply) error {
	if err := s.s.gate.covers(r, args.Bucket); err != nil {
		return err
	}
	cond, err := conditionOf(args.Condition)
	if err != nil {
		return s.invalidParams(r, err)
	}
	e := txs.ManifestEntry{
		Manifest:   txs.Manifest{Bucket: args.Bucket, Key: args.Key, Size: args.Size, ContentHash: ids.ID(args.ContentHash), Chunks: chunksOf(args.Chunks), Deleted: args.Deleted},
		Attributes: args.Attributes,
		Condition:  cond,
		Adopt:      args.Adopt,
	}
	if err := s.s.writes.ManifestsActive(); err != nil {
		if e.Condition.Kind != txs.IfAny || len(e.Attributes) > 0 || e.Adopt {
			return rpcError(err)
		}
		return s.putLegacyManifest(r, args, reply, e.Manifest)
	}
	if err := e.Verify(s.s.cfg.Genesis.TxLimits); err != nil {
		return s.invalidParams(r, err)
	}
	if l := s.s.cfg.Genesis.TxLimits.MaxKeyLen; len(args.ThenGet) > l {
		return s.invalidParams(r, fmt.Errorf("%w: thenGet is %d bytes, above maxKeyLen %d", txs.ErrBadKey, len(args.ThenGet), l))
	}
	sub, err := s.s.writes.WriteManifest(r.Context(), e)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.PutManifestReply{TxID: api.ID(sub.TxID), Index: sub.Index, PChainHeight: sub.PChainHeight, Owner: api.NodeID(sub.Owner)}
	if !args.Wait.Waits() {
		return nil
	}
	rc, err := s.wait(r.Context(), sub.TxID, sub.Index, args.WaitMs, args.Wait)
	if err != nil {
		return err
	}
	reply.Receipt = rc
	if rc.Status != api.StatusAccepted {
		return nil
	}
	en, ok := rc.Entry(sub.Index)
	if !ok {
		return rpcError(fmt.Errorf("receipt of %s has %d entries, the write is entry %d", sub.TxID, len(rc.Entries), sub.Index))
	}
	if args.OwnEntry {
		keepEntry(rc, sub.Index)
	}
	if en.Refused != "" {
		return refused(sub.TxID, sub.Index, en)
	}
	reply.Version = en.Version
	if args.ThenGet != "" {
		reply.Then = s.then(args.Bucket, args.ThenGet)
	}
	return nil
}

// then reads key for a write that asked for it, from this node's accepted
// state (at the write's height or later: the write is accepted here). A
// read that fails answers nothing: the writer then reads on its own.
func (s *Service) then(bucket, key string) *api.ThenReply {
	head, err := s.s.fresh.head(0)
	if err != nil {
		return nil
	}
	o, err := s.s.reads.State().Object(bucket, key)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return &api.ThenReply{Key: key}
	case err != nil:
		return nil
	}
	m := manifestReply(o)
	m.Head = head
	return &api.ThenReply{Key: key, Manifest: &m}
}

// refused answers a write whose receipt entry wrote nothing with the
// entry's reason, detail and the object's current version.
func refused(txID ids.ID, index int, e api.ReceiptEntry) error {
	msg := fmt.Sprintf("%s: %s (entry %d of %s)", e.Refused, e.Detail, index, txID)
	return &json2.Error{Code: json2.ErrorCode(api.RefusalCode(e.Refused)), Message: msg, Data: api.Refusal(api.ID(txID), index, e)}
}

func (s *Service) putLegacyManifest(r *http.Request, args *api.PutManifestArgs, reply *api.PutManifestReply, m txs.Manifest) error {
	if err := m.Verify(s.s.cfg.Genesis.TxLimits); err != nil {
		return s.invalidParams(r, err)
	}
	tx, err := s.s.writes.PutManifest(r.Context(), m)
	if err != nil {
		return rpcError(err)
	}
	h := tx.Unsigned.Head()
	*reply = api.PutManifestReply{TxID: api.ID(tx.ID()), PChainHeight: h.PChainHeight, Owner: api.NodeID(h.Owner)}
	reply.Receipt, err = s.waitIf(r.Context(), tx.ID(), args.Wait, args.WaitMs)
	return err
}

// Reclaim acknowledges chunks a blob store reclaimed: they leave their
// buckets' released lists. This node must own every chunk's bucket.
func (s *Service) Reclaim(r *http.Request, args *api.ReclaimArgs, reply *api.ReclaimReply) error {
	for _, c := range args.Chunks {
		if err := s.s.gate.covers(r, c.Bucket()); err != nil {
			return err
		}
	}
	chunks := chunkRefsOf(args.Chunks)
	u := &txs.ReclaimTx{Entries: chunks}
	if err := txs.Validate(u, s.s.cfg.Genesis.TxLimits); err != nil {
		return s.invalidParams(r, err)
	}
	tx, err := s.s.writes.Reclaim(r.Context(), chunks)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.ReclaimReply{TxID: api.ID(tx.ID()), Owner: api.NodeID(tx.Unsigned.Head().Owner)}
	reply.Receipt, err = s.waitIf(r.Context(), tx.ID(), args.Wait, args.WaitMs)
	return err
}

// waitIf is wait for a one-entry transaction when the call waits at all,
// else no receipt.
func (s *Service) waitIf(ctx context.Context, txID ids.ID, until api.Wait, waitMs uint64) (*api.ReceiptReply, error) {
	if !until.Waits() {
		return nil, nil
	}
	return s.wait(ctx, txID, 0, waitMs, until)
}

// AcquireLease asks for a range's lease (LeaseArgs.Holder, TTLMs).
func (s *Service) AcquireLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseAcquire, args, reply)
}

// RenewLease extends a grant (LeaseArgs.Holder, Token, TTLMs).
func (s *Service) RenewLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseRenew, args, reply)
}

// ReleaseLease ends a grant (LeaseArgs.Holder, Token).
func (s *Service) ReleaseLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseRelease, args, reply)
}

// ErrTxRejected: the transaction of a call that waits for its outcome was
// rejected (its receipt says why).
var ErrTxRejected = errcode.New(errcode.Rejected, "tx_rejected", "rpc: the transaction was rejected")

// lease signs one lease operation at the range's owner and answers with
// what the block that decided it left: the lease, or CodeLeaseHeld /
// CodeLeaseLost with the lease that stands.
func (s *Service) lease(r *http.Request, op txs.LeaseOp, args *api.LeaseArgs, reply *api.LeaseReply) error {
	en := txs.LeaseEntry{Op: op, Range: args.Range, Holder: args.Holder, Token: args.Token, TTLMs: args.TTLMs}
	if err := en.Verify(s.s.cfg.Genesis.TxLimits); err != nil {
		return s.invalidParams(r, err)
	}
	if err := s.s.gate.covers(r, args.Range); err != nil {
		return err
	}
	asked := s.s.writes.LeaseAsked()
	tx, err := s.s.writes.Lease(r.Context(), en)
	if err != nil {
		return rpcError(err)
	}
	rc, err := s.wait(r.Context(), tx.ID(), 0, args.WaitMs, api.WaitAccepted)
	if err != nil {
		return err
	}
	if rc.Status != api.StatusAccepted || len(rc.Entries) != 1 {
		return rpcError(fmt.Errorf("%w: %s: %s", ErrTxRejected, rc.TxID, rc.Error))
	}
	e := rc.Entries[0]
	switch outcome := state.LeaseOutcome(e.Lease); outcome {
	case state.LeaseHeld, state.LeaseLost:
		return rpcError(&execute.LeaseError{Range: e.Range, Outcome: outcome, TxID: ids.ID(rc.TxID),
			Lease: state.Lease{Holder: e.Holder, Token: e.Token, ExpiresMs: e.ExpiresMs}})
	}
	if op != txs.LeaseRelease {
		// A grant or renewal dated too far behind this node's clock is
		// not answered as held (writer.LeaseAnswer).
		b, err := s.s.reads.AcceptedAt(rc.Height)
		if err != nil {
			return rpcError(err)
		}
		grant := state.Lease{Holder: e.Holder, Token: e.Token, ExpiresMs: e.ExpiresMs}
		if err := s.s.writes.LeaseAnswer(asked, e.Range, grant, ids.ID(rc.TxID), b.Timestamp); err != nil {
			return rpcError(err)
		}
	}
	*reply = api.LeaseReply{TxID: rc.TxID, Height: rc.Height, Range: e.Range, Outcome: string(e.Lease), Holder: e.Holder, Token: e.Token, ExpiresMs: e.ExpiresMs}
	return nil
}

// GetLease reads a range's lease in accepted state; Held is as of the last
// accepted block's time.
func (s *Service) GetLease(_ *http.Request, args *api.RangeArgs, reply *api.LeaseStateReply) error {
	if err := txs.VerifyRange(args.Range, s.s.cfg.Genesis.TxLimits); err != nil {
		return invalidParams(err)
	}
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	at := s.s.reads.LastAccepted().Block.Timestamp
	st := s.s.reads.State()
	cur, ok, err := st.Lease(args.Range)
	if err != nil {
		return rpcError(err)
	}
	fence, err := st.Fence(args.Range)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.LeaseStateReply{Head: head, Range: args.Range, Fence: fence, AtMs: at}
	if ok {
		reply.Holder, reply.Token, reply.ExpiresMs, reply.Held = cur.Holder, cur.Token, cur.ExpiresMs, cur.Held(at)
	}
	return nil
}

// wait waits for a write's receipt (with api.WaitFinal, for a certificate
// covering its block too) for at most min(waitMs, the chain config's
// maxWaitMs, the genesis maxWaitMs); waitMs 0 means no bound of the
// caller's own. A timeout names the transaction, so the caller polls it
// instead of signing a second one.
func (s *Service) wait(ctx context.Context, txID ids.ID, index int, waitMs uint64, until api.Wait) (*api.ReceiptReply, error) {
	bound := min(s.s.gate.cfg.MaxWait(), s.s.cfg.Genesis.MaxWait())
	// Compared in milliseconds: a waitMs beyond what a Duration holds
	// must mean the node's bound, not overflow into a negative wait.
	if waitMs > 0 && waitMs < uint64(bound/time.Millisecond) {
		bound = time.Duration(waitMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	rc, err := s.s.writes.WaitReceipt(ctx, txID)
	if err == nil {
		// The decision is in accepted state at the head or below it.
		rc.Head = s.s.currentHead()
	}
	if err == nil && until == api.WaitFinal && rc.Status == api.StatusAccepted {
		if err = s.s.finality.WaitFinal(ctx, rc.Height); err != nil {
			err = fmt.Errorf("accepted at height %d, not final yet: %w", rc.Height, err)
		}
		s.finalize(rc)
	}
	if errors.Is(err, writer.ErrWaitTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return nil, &json2.Error{
			Code:    json2.ErrorCode(errcode.Timeout),
			Message: fmt.Sprintf("%v (wait bound %v = min(waitMs, maxWaitMs); poll getReceipt, do not resend)", err, bound),
			Data:    api.TimeoutData{TxID: api.ID(txID), Index: index, WaitMs: uint64(bound / time.Millisecond)},
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
	s.s.gate.reject(r, "", reasonInvalidParams, c.tokenName())
	return invalidParams(err)
}

// GetReceipt reports a transaction's status.
func (s *Service) GetReceipt(_ *http.Request, args *api.TxIDArgs, reply *api.ReceiptReply) error {
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	rc, err := s.s.writes.Receipt(ids.ID(args.TxID))
	if err != nil {
		return rpcError(err)
	}
	s.finalize(rc)
	*reply = *rc
	reply.Head = head
	return nil
}

// WaitReceipt is getReceipt that answers once the transaction is decided
// (or, with wait "final", once a certificate covers its block): a client
// waiting for finality learns it when the certificate comes instead of
// polling. A wait holds a request open, so, like a write, it needs a write
// token and counts against its maxPendingPerToken. It waits only for a
// transaction this node knows: an unknown one (another node's, not
// gossiped here, or replaced where this node cannot see) is answered at
// once, so that the client asks elsewhere instead of waiting out the bound.
func (s *Service) WaitReceipt(r *http.Request, args *api.WaitReceiptArgs, reply *api.ReceiptReply) error {
	until := args.Wait
	if until == api.WaitNone {
		until = api.WaitAccepted
	}
	head, err := s.s.fresh.head(0)
	if err != nil {
		return rpcError(err)
	}
	now, err := s.s.writes.Receipt(ids.ID(args.TxID))
	if err != nil {
		return rpcError(err)
	}
	if now.Status == api.StatusUnknown {
		*reply = *now
		reply.Head = head
		return nil
	}
	rc, err := s.wait(r.Context(), ids.ID(args.TxID), 0, args.WaitMs, until)
	if err != nil {
		return err
	}
	*reply = *rc
	return nil
}

// finalize marks an accepted receipt final when a certificate covers its
// block, and attaches that certificate.
func (s *Service) finalize(rc *api.ReceiptReply) {
	if rc.Status != api.StatusAccepted || rc.Final {
		return
	}
	if cert, err := s.s.finality.Covering(rc.Height); err == nil {
		a := cert.API()
		rc.Final, rc.Certificate, rc.CertifiedBy = true, &a, cert.Height
	}
}

// GetCertificate is the finality certificate covering a height: the lowest
// one at or above it.
func (s *Service) GetCertificate(_ *http.Request, args *api.HeightArgs, reply *api.CertificateReply) error {
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	if err := accepted(head, args.Height); err != nil {
		return rpcError(err)
	}
	cert, err := s.s.finality.Covering(args.Height)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.CertificateReply{Head: head, Height: args.Height, Certificate: cert.API()}
	return nil
}

// GetBlock is the accepted block at a height, as bytes: what a client
// walks to prove a certificate above a receipt covers it.
func (s *Service) GetBlock(_ *http.Request, args *api.HeightArgs, reply *api.BlockReply) error {
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	if err := accepted(head, args.Height); err != nil {
		return rpcError(err)
	}
	b, err := s.s.reads.AcceptedAt(args.Height)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.BlockReply{Head: head, Height: b.Height, ID: api.ID(b.ID()), Bytes: "0x" + hex.EncodeToString(b.Bytes())}
	return nil
}

// GetAllocation reads a range's next unissued id.
func (s *Service) GetAllocation(_ *http.Request, args *api.RangeArgs, reply *api.AllocationReply) error {
	if err := txs.VerifyRange(args.Range, s.s.cfg.Genesis.TxLimits); err != nil {
		return invalidParams(err)
	}
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	next, err := s.s.reads.State().Counter(args.Range)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.AllocationReply{Head: head, Range: args.Range, Next: next}
	return nil
}

// GetManifest reads an object's newest accepted manifest (a tombstone for
// a deleted object), with its version and attributes.
func (s *Service) GetManifest(r *http.Request, args *api.ManifestArgs, reply *api.ManifestReply) error {
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	if err := s.ownerRead(r, args.OwnerRead, args.Bucket, head); err != nil {
		return err
	}
	o, err := s.s.reads.State().Object(args.Bucket, args.Key)
	if errors.Is(err, state.ErrNotFound) {
		return &json2.Error{Code: json2.ErrorCode(errcode.NotFound), Message: err.Error()}
	}
	if err != nil {
		return rpcError(err)
	}
	*reply = manifestReply(o)
	reply.Head = head
	return nil
}

// ownerRead refuses, as its answer, a read that asks for the bucket's owner (api.OwnerRead)
// where the answer could miss a write the owner acknowledged: at a node
// that is not the owner in the membership its next block has (NotOwner,
// naming the owner), and at an owner that validators holding more than a
// third of the stake are ahead of by even one block (a former owner that
// stopped following the chain believes it still owns the bucket; its
// peers' pushed signatures say otherwise).
func (s *Service) ownerRead(r *http.Request, o api.OwnerRead, bucket string, head api.Head) error {
	if !o.AsOwner {
		return nil
	}
	if err := txs.VerifyBucket(bucket, s.s.cfg.Genesis.TxLimits); err != nil {
		return invalidParams(err)
	}
	e, err := s.s.reads.Snapshot(r.Context())
	if err != nil {
		return rpcError(err)
	}
	if owner := e.Owner(bucket); owner != s.s.cfg.NodeID {
		return rpcError(&execute.NotOwnerError{Range: bucket, Signer: s.s.cfg.NodeID, Owner: owner, PChainHeight: e.Height()})
	}
	if peers, ok := s.s.fresh.peers.PeersHeight(); ok && peers > head.AcceptedHeight {
		return rpcError(&lagError{fmt.Errorf("%w: an owner read (last accepted height %d, validators with more than a third of the stake at %d)", ErrBehindPeers, head.AcceptedHeight, peers), head.AcceptedHeight})
	}
	return nil
}

func manifestReply(o *state.Object) api.ManifestReply {
	return api.ManifestReply{Manifest: apiManifest(o.Manifest), Version: o.Version, Height: o.Height, Attributes: o.Attributes}
}

// ErrBadListing: a listing's arguments out of bounds.
var ErrBadListing = errcode.New(errcode.InvalidParams, "bad_listing", "rpc: a listing takes a limit of 0 to 1000 and names within the genesis limits")

// ListManifests reads one page of a bucket's live objects in key order
// from accepted state.
func (s *Service) ListManifests(r *http.Request, args *api.ListManifestsArgs, reply *api.ListManifestsReply) error {
	l := s.s.cfg.Genesis.TxLimits
	if err := txs.VerifyBucket(args.Bucket, l); err != nil {
		return invalidParams(err)
	}
	limit, err := listLimit(args.Limit)
	if err != nil {
		return invalidParams(err)
	}
	for _, v := range []string{args.Prefix, args.StartAfter, args.Delimiter} {
		if len(v) > l.MaxKeyLen {
			return invalidParams(fmt.Errorf("%w: a prefix, startAfter or delimiter of %d bytes (maxKeyLen %d)", ErrBadListing, len(v), l.MaxKeyLen))
		}
	}
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	if err := s.ownerRead(r, args.OwnerRead, args.Bucket, head); err != nil {
		return err
	}
	page, err := s.s.reads.ListObjects(state.ObjectQuery{
		Bucket: args.Bucket, Prefix: args.Prefix, StartAfter: args.StartAfter, Delimiter: args.Delimiter,
		Limit: limit, ScanLimit: limit * api.ListScanFactor,
	})
	if err != nil {
		return rpcError(err)
	}
	*reply = api.ListManifestsReply{Head: head, Manifests: make([]api.ManifestReply, 0, len(page.Objects)), CommonPrefixes: page.CommonPrefixes, Truncated: page.Truncated, Height: head.AcceptedHeight}
	if page.Truncated {
		reply.Next = page.Next
	}
	for _, o := range page.Objects {
		reply.Manifests = append(reply.Manifests, manifestReply(o))
	}
	return nil
}

// ListReleased reads one page of a bucket's released list (chunks of
// overwritten and deleted objects waiting to be reclaimed) from accepted
// state.
func (s *Service) ListReleased(_ *http.Request, args *api.ListReleasedArgs, reply *api.ListReleasedReply) error {
	if err := txs.VerifyBucket(args.Bucket, s.s.cfg.Genesis.TxLimits); err != nil {
		return invalidParams(err)
	}
	limit, err := listLimit(args.Limit)
	if err != nil {
		return invalidParams(err)
	}
	q := state.ReleasedQuery{Bucket: args.Bucket, Limit: limit}
	if a := args.After; a != nil {
		q.After = &state.Released{Height: a.Height, Chunk: txs.Chunk{Range: a.Range, ID: a.ID}}
	}
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	page, err := s.s.reads.ListReleased(q)
	if err != nil {
		return rpcError(err)
	}
	*reply = api.ListReleasedReply{Head: head, Released: make([]api.Released, 0, len(page.Entries)), Truncated: page.Truncated, Height: head.AcceptedHeight}
	for _, r := range page.Entries {
		reply.Released = append(reply.Released, api.Released{Range: r.Chunk.Range, ID: r.Chunk.ID, Size: r.Chunk.Size, Hash: api.ID(r.Chunk.Hash), Height: r.Height})
	}
	return nil
}

// listLimit is a page's limit: 1..MaxListLimit, 0 meaning the bound.
func listLimit(n int) (int, error) {
	switch {
	case n == 0:
		return api.MaxListLimit, nil
	case n < 0 || n > api.MaxListLimit:
		return 0, fmt.Errorf("%w: limit %d", ErrBadListing, n)
	}
	return n, nil
}

// GetOwner names a range's owner in the membership the next block will
// have: where writes are routed.
func (s *Service) GetOwner(r *http.Request, args *api.RangeArgs, reply *api.OwnerReply) error {
	if err := txs.VerifyRange(args.Range, s.s.cfg.Genesis.TxLimits); err != nil {
		return invalidParams(err)
	}
	head, err := s.s.fresh.head(args.MinHeight)
	if err != nil {
		return rpcError(err)
	}
	e, err := s.s.reads.Snapshot(r.Context())
	if err != nil {
		return rpcError(err)
	}
	*reply = api.OwnerReply{Head: head, Range: args.Range, Owner: api.NodeID(e.Owner(args.Range)), PChainHeight: e.Height(), Fingerprint: api.ID(e.Fingerprint())}
	return nil
}

// GetMembership describes the membership the next block will have: the
// members (live validators), the whole P-chain set and each validator's
// liveness record.
func (s *Service) GetMembership(r *http.Request, args *api.ReadArgs, reply *api.MembershipReply) error {
	return s.membership(r, args.MinHeight, reply)
}

func (s *Service) membership(r *http.Request, minHeight uint64, reply *api.MembershipReply) error {
	head, err := s.s.fresh.head(minHeight)
	if err != nil {
		return rpcError(err)
	}
	e, err := s.s.reads.Snapshot(r.Context())
	if err != nil {
		return rpcError(err)
	}
	v, err := s.s.reads.ValidatorSet(r.Context(), e.Height())
	if err != nil {
		return rpcError(fmt.Errorf("%w: %w", chain.ErrNotReady, err))
	}
	m := e.Record()
	*reply = api.MembershipReply{
		Head:         head,
		PChainHeight: e.Height(), Round: m.Round, Fingerprint: api.ID(e.Fingerprint()),
		Generation: m.Generation, Fallback: m.Fallback,
		RoundDurationMs: s.s.cfg.Genesis.RoundDurationMs, LivenessRounds: s.s.cfg.Genesis.LivenessRounds,
		NodeID: api.NodeID(s.s.cfg.NodeID),
	}
	for _, mb := range e.Members() {
		reply.Members = append(reply.Members, api.Member{NodeID: api.NodeID(mb.NodeID), Weight: mb.Weight})
	}
	accepted := s.s.reads.State()
	for _, val := range v.Members() {
		_, member := e.Weight(val.NodeID)
		vl := api.ValidatorLiveness{NodeID: api.NodeID(val.NodeID), Weight: val.Weight, Member: member}
		rec, known, err := accepted.Liveness(val.NodeID)
		if err != nil {
			return rpcError(err)
		}
		if known {
			vl.FirstSeen = &rec.FirstSeen
			if rec.HasHeartbeat {
				vl.LastHeartbeat = &rec.Heartbeat
			}
			vl.RoundsOut = rec.Out
		}
		rm, decided, err := accepted.Removal(val.NodeID)
		if err != nil {
			return rpcError(err)
		}
		if decided {
			vl.RemovalDecided = &rm.Round
		}
		reply.Validators = append(reply.Validators, vl)
	}
	return nil
}

// GetNode identifies this node and its last accepted block, and says
// whether it answers reads (it answers even when they do not, so that a
// client can tell who is behind).
func (s *Service) GetNode(_ *http.Request, _ *api.ReadArgs, reply *api.NodeReply) error {
	last := s.s.reads.LastAccepted()
	*reply = api.NodeReply{
		Head:   api.Head{AcceptedHeight: last.Block.Height, AcceptedID: api.ID(last.ID())},
		NodeID: api.NodeID(s.s.cfg.NodeID), NetworkID: s.s.cfg.NetworkID, ChainID: api.ID(s.s.cfg.ChainID),
		Height: last.Block.Height, StateRoot: api.ID(last.StateRoot), DirectURI: s.s.DirectURI(),
		NotReady: reason(s.s.fresh.notReady()),
	}
	return nil
}

// currentHead is the last accepted block, for answers that are not reads
// of their own (a write's receipt).
func (s *Server) currentHead() api.Head {
	last := s.reads.LastAccepted()
	return api.Head{AcceptedHeight: last.Block.Height, AcceptedID: api.ID(last.ID())}
}

func invalidParams(err error) error {
	_, reason := errcode.Of(err)
	return &json2.Error{Code: json2.ErrorCode(errcode.InvalidParams), Message: err.Error(), Data: api.RejectedData{Reason: reason}}
}

// retryAfter is the back-off a NotReady or MempoolFull answer suggests.
var retryAfter = map[string]uint64{"pool_refill": 200, "mempool_full": 200}

// rpcError answers err with the code and reason it carries (package
// errcode): the identity belongs to the error, never to its message.
func rpcError(err error) error {
	code, reason := errcode.Of(err)
	if code == errcode.Unknown && errors.Is(err, context.DeadlineExceeded) {
		code, reason = errcode.Timeout, "deadline"
	}
	e := &json2.Error{Code: json2.ErrorCode(code), Message: err.Error()}
	switch code {
	case errcode.NotOwner:
		var noe *execute.NotOwnerError
		if errors.As(err, &noe) {
			e.Data = api.NotOwnerData{Range: noe.Range, Owner: api.NodeID(noe.Owner), PChainHeight: noe.PChainHeight}
		}
	case errcode.NotReady, errcode.MempoolFull:
		wait, ok := retryAfter[reason]
		if !ok {
			wait = 1000
		}
		d := api.RetryData{RetryAfterMs: wait}
		if code == errcode.NotReady {
			d.Reason = reason
			d.AcceptedHeight, _ = acceptedOf(err)
		}
		e.Data = d
	case errcode.Rejected, errcode.InvalidParams:
		e.Data = api.RejectedData{Reason: reason}
	case errcode.NotFound:
		e.Data = api.NotFoundData{Reason: reason}
	case errcode.LeaseHeld, errcode.LeaseLost:
		var le *execute.LeaseError
		if errors.As(err, &le) {
			e.Data = api.LeaseData{Range: le.Range, Holder: le.Lease.Holder, Token: le.Lease.Token, ExpiresMs: le.Lease.ExpiresMs, TxID: api.ID(le.TxID)}
		}
	}
	return e
}
