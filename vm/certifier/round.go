package certifier

import (
	"context"
	"errors"

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
// validator set that certifies it and the signatures checked so far,
// by index in the canonical set. It outlives a round, so that a retry asks
// only those that have not signed.
type attempt struct {
	statement certificate.Statement
	message   *warp.UnsignedMessage
	request   []byte
	set       validators.WarpSet
	index     map[ids.NodeID]int
	sigs      map[int]*bls.Signature
	weight    uint64
}

func (a *attempt) quorum() bool { return certificate.Supermajority(a.weight, a.set.TotalWeight) }

func (a *attempt) add(i int, sig *bls.Signature) {
	if _, ok := a.sigs[i]; ok {
		return // validators sharing a key sign once
	}
	a.sigs[i] = sig
	a.weight += a.set.Validators[i].Weight
}

// newAttempt prepares b's statement and signs it with this node's key when
// it is a validator of b's P-chain height.
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
	a := &attempt{statement: st, message: msg, request: request, set: vs, index: map[ids.NodeID]int{}, sigs: map[int]*bls.Signature{}}
	for i, v := range vs.Validators {
		for _, id := range v.NodeIDs {
			a.index[id] = i
		}
	}
	if i, ok := a.index[c.cfg.NodeID]; ok {
		b, err := c.cfg.Signer.Sign(msg)
		if err != nil {
			return nil, err
		}
		// A node's own signature is checked like anyone's: a signer whose
		// key is not the one the P-chain has would spoil every aggregate.
		sig, err := bls.SignatureFromBytes(b)
		if err != nil || !bls.Verify(vs.Validators[i].PublicKey, sig, msg.Bytes()) {
			c.cfg.Log.Error("this node's signature does not verify against its P-chain BLS key: certificates go on without it")
			c.metrics.refusals.WithLabelValues("own_signature").Inc()
		} else {
			a.add(i, sig)
		}
	}
	return a, nil
}

// answer is one node's reply to a signature request.
type answer struct {
	nodeID ids.NodeID
	bytes  []byte
	err    error
}

// collect runs one round: it asks every validator that has not signed yet
// and takes their answers until a is a quorum, every answer is in, or the
// round times out. It reports whether a signature was added.
func (c *Certifier) collect(ctx context.Context, a *attempt) (bool, error) {
	if a.quorum() || c.requester == nil {
		return false, nil
	}
	ask := set.NewSet[ids.NodeID](len(a.index))
	for id, i := range a.index {
		if _, signed := a.sigs[i]; !signed && id != c.cfg.NodeID {
			ask.Add(id)
		}
	}
	if ask.Len() == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, roundTimeout)
	defer cancel()
	// One answer per node asked: the callback never blocks the p2p router.
	answers := make(chan answer, ask.Len())
	onResponse := func(_ context.Context, nodeID ids.NodeID, b []byte, err error) {
		select {
		case answers <- answer{nodeID: nodeID, bytes: b, err: err}:
		default:
		}
	}
	if err := c.requester.AppRequest(ctx, ask, a.request, onResponse); err != nil {
		return false, err
	}
	progressed := false
	for pending := ask.Len(); pending > 0 && !a.quorum(); pending-- {
		select {
		case <-ctx.Done():
			return progressed, nil
		case ans := <-answers:
			if c.take(a, ans) {
				progressed = true
			}
		}
	}
	return progressed, nil
}

// take checks one answer against its validator's key and adds it.
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
	sig, err := bls.SignatureFromBytes(resp.Signature)
	if err != nil || !bls.Verify(a.set.Validators[i].PublicKey, sig, a.message.Bytes()) {
		c.metrics.refusals.WithLabelValues("bad_signature").Inc()
		return false
	}
	a.add(i, sig)
	return true
}
