package certifier

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/proto/pb/sdk"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/vm/block"
)

// attempt is the signature collection for one block: the statement, the
// validator set that certifies it and the signatures so far, by index in
// the canonical set. It outlives a round, so that a retry asks only those
// that have not signed.
//
// Signatures are checked optimistically: all of them at once, as one
// aggregate, when together they would make a quorum (one pairing check
// instead of one per validator); only if the aggregate fails is each
// checked alone, and the bad ones are dropped.
type attempt struct {
	statement certificate.Statement
	message   *warp.UnsignedMessage
	request   []byte
	set       validators.WarpSet
	index     map[ids.NodeID]int
	// sigs are checked signatures, pending unchecked ones.
	sigs, pending         map[int]*bls.Signature
	weight, pendingWeight uint64
}

func (a *attempt) quorum() bool { return certificate.Supermajority(a.weight, a.set.TotalWeight) }

// inSight: a's signatures, checked or not, would make a quorum.
func (a *attempt) inSight() bool {
	return certificate.Supermajority(a.weight+a.pendingWeight, a.set.TotalWeight)
}

func (a *attempt) has(i int) bool {
	_, ok := a.sigs[i]
	_, waiting := a.pending[i]
	return ok || waiting
}

func (a *attempt) offer(i int, sig *bls.Signature) {
	if a.has(i) {
		return // validators sharing a key sign once
	}
	a.pending[i] = sig
	a.pendingWeight += a.set.Validators[i].Weight
}

// check moves the pending signatures to the checked ones once together they
// would make a quorum, and reports the indices it dropped as bad.
func (a *attempt) check() []int {
	if len(a.pending) == 0 || !certificate.Supermajority(a.weight+a.pendingWeight, a.set.TotalWeight) {
		return nil
	}
	all := make(map[int]*bls.Signature, len(a.sigs)+len(a.pending))
	maps.Copy(all, a.sigs)
	maps.Copy(all, a.pending)
	if a.verifies(all) {
		a.accept(slices.Collect(maps.Keys(a.pending)))
		return nil
	}
	var good, bad []int
	for i, sig := range a.pending {
		if sig.SigValidate(false) && bls.Verify(a.set.Validators[i].PublicKey, sig, a.message.Bytes()) {
			good = append(good, i)
		} else {
			bad = append(bad, i)
		}
	}
	a.accept(good)
	for _, i := range bad {
		delete(a.pending, i)
		a.pendingWeight -= a.set.Validators[i].Weight
	}
	return bad
}

// decodeSignature decompresses a signature without checking that it lies
// in the signature group (bls.SignatureFromBytes does), which is about two
// thirds of what decoding a signature costs (BenchmarkDecodeSignature):
// check makes that check once on the aggregate, and on each signature only
// when the aggregate fails. A point outside the group cannot make a
// certificate: the aggregate would be outside it too, unless other
// signatures cancel its part outside the group, and then the aggregate is
// still a valid signature of those signers, each of whom could have made
// it with their own key (TestSignaturesCancellingOutsideTheGroup).
func decodeSignature(raw []byte) (*bls.Signature, error) {
	if len(raw) != bls.SignatureLen {
		return nil, bls.ErrInvalidSignature
	}
	sig := new(bls.Signature).Uncompress(raw)
	if sig == nil {
		return nil, bls.ErrInvalidSignature
	}
	return sig, nil
}

func (a *attempt) accept(indices []int) {
	for _, i := range indices {
		a.sigs[i] = a.pending[i]
		a.weight += a.set.Validators[i].Weight
		delete(a.pending, i)
		a.pendingWeight -= a.set.Validators[i].Weight
	}
}

// verifies checks sigs as one aggregate against their validators' keys.
// The signatures were only decoded (decodeSignature): the aggregate is
// checked for membership in the signature group instead, which is what a
// certificate's verifier checks too.
func (a *attempt) verifies(sigs map[int]*bls.Signature) bool {
	list := make([]*bls.Signature, 0, len(sigs))
	keys := make([]*bls.PublicKey, 0, len(sigs))
	for i, sig := range sigs {
		list = append(list, sig)
		keys = append(keys, a.set.Validators[i].PublicKey)
	}
	agg, err := bls.AggregateSignatures(list)
	if err != nil || !agg.SigValidate(false) {
		return false
	}
	key, err := bls.AggregatePublicKeys(keys)
	if err != nil {
		return false
	}
	return bls.Verify(key, agg, a.message.Bytes())
}

// newAttempt prepares b's statement and signs it with this node's key when
// it is a validator of b's P-chain height (the signature the handler gives
// peers: one signing per block).
func (c *Certifier) newAttempt(ctx context.Context, b *block.Block) (*attempt, error) {
	st, _ := Statement(c.cfg.NetworkID, c.cfg.ChainID, b)
	msg, err := st.Message()
	if err != nil {
		return nil, err
	}
	request, err := proto.Marshal(&sdk.SignatureRequest{Message: msg.Bytes()})
	if err != nil {
		return nil, err
	}
	vs, err := c.validatorSet(ctx, st.PChainHeight)
	if err != nil {
		return nil, err
	}
	a := &attempt{
		statement: st, message: msg, request: request, set: vs, index: map[ids.NodeID]int{},
		sigs: map[int]*bls.Signature{}, pending: map[int]*bls.Signature{},
	}
	for i, v := range vs.Validators {
		for _, id := range v.NodeIDs {
			a.index[id] = i
		}
	}
	if i, ok := a.index[c.cfg.NodeID]; ok {
		raw, err := c.sign(msg)
		if err != nil {
			return nil, err
		}
		// A node's own signature is checked like anyone's (in the
		// aggregate): a signer whose key is not the one the P-chain has
		// would otherwise spoil every certificate.
		if sig, err := decodeSignature(raw); err == nil {
			a.offer(i, sig)
		}
	}
	c.drop(a, a.check())
	return a, nil
}

// sign is this node's signature of msg, made once: the handler answering
// peers, the pushes and the attempts share it.
func (c *Certifier) sign(msg *warp.UnsignedMessage) ([]byte, error) {
	if raw, ok := c.signatures.Get(msg.ID()); ok {
		return raw, nil
	}
	raw, err := c.cfg.Signer.Sign(msg)
	if err != nil {
		return nil, err
	}
	c.signatures.Put(msg.ID(), raw)
	return raw, nil
}

// drop counts and logs the signatures check found bad.
func (c *Certifier) drop(a *attempt, bad []int) {
	for _, i := range bad {
		c.metrics.refusals.WithLabelValues("bad_signature").Inc()
		if slices.Contains(a.set.Validators[i].NodeIDs, c.cfg.NodeID) {
			c.cfg.Log.Error("this node's signature does not verify against its P-chain BLS key: certificates go on without it")
			continue
		}
		c.cfg.Log.Warn("a validator's signature on a certificate statement does not verify",
			zap.Stringers("nodeIDs", a.set.Validators[i].NodeIDs), zap.Uint64("height", a.statement.Height))
	}
}

// answer is one node's reply to a signature request.
type answer struct {
	nodeID ids.NodeID
	bytes  []byte
	err    error
}

// collect runs one round: it asks every validator that has not signed yet
// and takes their answers until a is a quorum, the round times out, or
// nobody is left to wait for. A validator that has not accepted the block
// yet (it usually accepts within milliseconds of this node) is asked again
// after a short, growing delay within the round. It reports whether a
// signature was added.
func (c *Certifier) collect(ctx context.Context, a *attempt) (bool, error) {
	if a.quorum() || c.requester == nil {
		return false, nil
	}
	ask := set.NewSet[ids.NodeID](len(a.index))
	for id, i := range a.index {
		if !a.has(i) && id != c.cfg.NodeID {
			ask.Add(id)
		}
	}
	if ask.Len() == 0 {
		return false, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	end := c.cfg.Timers.NewTimer(roundTimeout)
	defer end.Stop()
	// At most one request per node is in flight, so one slot per node
	// keeps the callbacks (and the retry timers) from ever blocking.
	answers := make(chan answer, ask.Len())
	due := make(chan ids.NodeID, ask.Len())
	onResponse := func(_ context.Context, nodeID ids.NodeID, b []byte, err error) {
		select {
		case answers <- answer{nodeID: nodeID, bytes: b, err: err}:
		default:
		}
	}
	if err := c.requester.AppRequest(ctx, ask, a.request, onResponse); err != nil {
		return false, err
	}
	delays := make(map[ids.NodeID]time.Duration, ask.Len())
	waited := make(map[ids.NodeID]time.Duration, ask.Len())
	inFlight, scheduled, progressed := ask.Len(), 0, false
	for (inFlight > 0 || scheduled > 0) && !a.quorum() {
		select {
		case <-ctx.Done():
			return progressed, nil
		case <-end.C():
			return progressed, nil
		case <-c.wake:
			// A push, or a newer block this node must push its
			// signature for: a certificate in sight ends the round.
			c.pushAccepted(ctx)
			if err := c.openAttempts(ctx); err != nil {
				return progressed, err
			}
			c.adoptPushes()
			if c.quorumInSight() {
				return true, nil
			}
		case id := <-due:
			scheduled--
			if err := c.requester.AppRequest(ctx, set.Of(id), a.request, onResponse); err == nil {
				inFlight++
			}
		case ans := <-answers:
			inFlight--
			if notAcceptedYet(ans.err) {
				// Validators accept a block within milliseconds of each
				// other, rarely more: ask again soon, a little later each
				// time, and not for longer than notAcceptedFor in a round.
				d := min(delays[ans.nodeID]+retryDelay, maxRetryDelay)
				if waited[ans.nodeID] += d; waited[ans.nodeID] > notAcceptedFor {
					c.take(a, ans) // counted as a refusal; asked again next round
					continue
				}
				delays[ans.nodeID] = d
				scheduled++
				id := ans.nodeID
				retry := c.cfg.Timers.NewTimer(d)
				go func() {
					defer retry.Stop()
					select {
					case <-retry.C():
						select {
						case due <- id:
						default:
						}
					case <-ctx.Done(): // the round ended
					}
				}()
				c.metrics.refusals.WithLabelValues("not_accepted_yet").Inc()
				continue
			}
			if c.take(a, ans) {
				progressed = true
				c.drop(a, a.check())
			}
		}
	}
	return progressed, nil
}

func notAcceptedYet(err error) bool {
	var appErr *common.AppError
	return errors.As(err, &appErr) && appErr.Code == CodeNotAcceptedYet
}

// take parses one answer and offers its signature (checked later, in the
// aggregate).
func (c *Certifier) take(a *attempt, ans answer) bool {
	i, ok := a.index[ans.nodeID]
	if !ok {
		return false
	}
	if ans.err != nil {
		reason := "failed"
		var appErr *common.AppError
		if errors.As(ans.err, &appErr) {
			switch appErr.Code {
			case CodeNotAcceptedYet:
				reason = "not_accepted_yet"
			case CodeConflicts:
				reason = "conflicts"
				c.cfg.Log.Warn("a validator accepted a different block at a height this node certifies",
					zap.Stringer("nodeID", ans.nodeID), zap.Uint64("height", a.statement.Height), zap.String("answer", appErr.Message))
			}
		}
		c.metrics.refusals.WithLabelValues(reason).Inc()
		return false
	}
	var resp sdk.SignatureResponse
	if err := proto.Unmarshal(ans.bytes, &resp); err != nil {
		c.metrics.refusals.WithLabelValues("malformed").Inc()
		return false
	}
	sig, err := decodeSignature(resp.Signature)
	if err != nil {
		c.metrics.refusals.WithLabelValues("bad_signature").Inc()
		return false
	}
	a.offer(i, sig)
	return true
}
