package vm_test

import (
	"context"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/proto/pb/sdk"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/version"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/s-chain/schain/vm/certifier"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/manager"
)

// removalGenesis: 10 s liveness rounds, K=1, a removal decided at the
// first round a validator is out, at least two validators kept.
var removalGenesis = []byte(`{"timestamp": 1000, "roundDurationMs": 10000, "livenessRounds": 1, "removalRounds": 1, "minValidators": 2, "mempool": {"maxTxs": 64, "maxBytes": 1048576}}`)

// l1MinNonce is every net validator's MinNonce on the fake P-chain.
const l1MinNonce = 1

// l1Current is the net's P-chain current set as an L1's: each key is an
// L1 validator of weight 10 validating as validationOf(its node).
type l1Current struct{ nw *net }

func (c l1Current) GetCurrentValidatorSet(_ context.Context, s ids.ID) (map[ids.ID]*validators.GetCurrentValidatorOutput, uint64, error) {
	out := map[ids.ID]*validators.GetCurrentValidatorOutput{}
	if s != subnetID {
		return out, 20, nil
	}
	for _, k := range c.nw.keys {
		vid := validationOf(k.NodeID)
		out[vid] = &validators.GetCurrentValidatorOutput{
			ValidationID: vid, NodeID: k.NodeID, PublicKey: k.PublicKey(), Weight: 10,
			MinNonce: l1MinNonce, IsActive: true, IsL1Validator: true,
		}
	}
	return out, 20, nil
}

func validationOf(n ids.NodeID) ids.ID {
	v := ids.ID{'v'}
	copy(v[1:], n[:])
	return v
}

// askSignature asks node i's ACP-118 handler (the one the VM registers)
// to sign msg: the signature, checked against i's key, or the refusal.
func (nw *net) askSignature(i int, msg *warp.UnsignedMessage) ([]byte, *common.AppError) {
	req, err := proto.Marshal(&sdk.SignatureRequest{Message: msg.Bytes()})
	require.NoError(nw.t, err)
	resp, appErr := nw.vms[i].Certifier().Handler().AppRequest(context.Background(), nw.keys[0].NodeID, time.Now().Add(time.Second), req)
	if appErr != nil {
		return nil, appErr
	}
	var r sdk.SignatureResponse
	require.NoError(nw.t, proto.Unmarshal(resp, &r))
	sig, err := bls.SignatureFromBytes(r.Signature)
	require.NoError(nw.t, err)
	require.True(nw.t, bls.Verify(nw.keys[i].PublicKey(), sig, msg.Bytes()), "vm %d signed with its key", i)
	return r.Signature, nil
}

// refusal is the code node i refuses msg with (0: it signed).
func (nw *net) refusal(i int, msg *warp.UnsignedMessage) int32 {
	_, appErr := nw.askSignature(i, msg)
	if appErr == nil {
		return 0
	}
	return appErr.Code
}

// removalOf is the manager's removal message of node dead at nonce.
func (nw *net) removalOf(dead int, nonce uint64) *warp.UnsignedMessage {
	msg, err := manager.RemovalMessage(5, chainID, validationOf(nw.keys[dead].NodeID), nonce)
	require.NoError(nw.t, err)
	return msg
}

// decideRemoval runs 4 validators through the rounds in which validator
// dead stops heartbeating: rounds 1 and 2 full, round 3 without it (its
// round-2 heartbeat still counts). It returns the round-4 opening block,
// which decides its removal, verified by every VM and not yet accepted.
func (nw *net) decideRemoval(dead int) []snowman.Block {
	nw.enterRound(0)
	nw.ready(10)
	var alive []int
	for i := range nw.vms {
		if i != dead {
			alive = append(alive, i)
		}
	}
	for r := int64(1); r <= 2; r++ {
		nw.enterRound(r)
		nw.heartbeats(0, append(alive, dead)...)
	}
	nw.enterRound(3)
	nw.heartbeats(0, alive...)
	nw.enterRound(4)
	for _, i := range alive {
		tx, err := nw.vms[i].Writer().Heartbeat(context.Background())
		require.NoError(nw.t, err)
		nw.gossip(i, tx)
	}
	ctx := context.Background()
	last, err := nw.vms[0].LastAccepted(ctx)
	require.NoError(nw.t, err)
	for _, v := range nw.vms {
		require.NoError(nw.t, v.SetPreferenceWithContext(ctx, last, &snowblock.Context{PChainHeight: 10}))
	}
	require.NoError(nw.t, nw.vms[0].Builder().Settled(ctx))
	b, err := nw.vms[0].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(nw.t, err)
	return nw.deliver(b, 10)
}

// TestL1RemovalSignedOnlyForAcceptedDecision: through the VM's own ACP-118
// handler, a validator signs the removal of a dead validator only once a
// block it accepted decided it: not while the validator is a member, not
// for a decision in a block it only verified; it signs at once after
// accepting it, refuses while it is connected to the validator, signs
// again once disconnected, and the dead validator never signs its own. The
// certificate statements keep being signed beside it.
func TestL1RemovalSignedOnlyForAcceptedDecision(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNetWith(t, 4, removalGenesis)
	const dead = 3
	msg := nw.removalOf(dead, l1MinNonce)

	pending := nw.decideRemoval(dead)
	for i := range nw.vms {
		_, ok, err := nw.vms[i].Chain().State().Removal(nw.keys[dead].NodeID)
		require.NoError(err)
		require.False(ok, "vm %d: the deciding block is not accepted yet", i)
		require.Equal(manager.CodeNoDecision, nw.refusal(i, msg), "vm %d: a decision only in a verified block is not signed", i)
	}
	acceptAll(t, pending)
	for i := range nw.vms {
		rm, ok, err := nw.vms[i].Chain().State().Removal(nw.keys[dead].NodeID)
		require.NoError(err)
		require.True(ok, "vm %d: accepted the decision", i)
		require.Equal(uint64(4), rm.Round)
	}

	for _, i := range []int{0, 1, 2} {
		require.Zero(nw.refusal(i, msg), "vm %d signs the removal its accepted state decided", i)
	}
	require.Equal(manager.CodeConnected, nw.refusal(dead, msg), "never its own removal")
	require.Zero(nw.refusal(1, nw.removalOf(dead, l1MinNonce+5)), "a later nonce too")
	require.Equal(manager.CodeStaleNonce, nw.refusal(1, nw.removalOf(dead, l1MinNonce-1)))
	require.Equal(manager.CodeNoDecision, nw.refusal(1, nw.removalOf(2, l1MinNonce)), "a live validator's removal")

	require.NoError(nw.vms[1].Connected(ctx, nw.keys[dead].NodeID, version.Current))
	require.Equal(manager.CodeConnected, nw.refusal(1, msg), "connected to it: alive in vm 1's view (the signature is not served from a cache)")
	require.Zero(nw.refusal(2, msg), "vm 2's view is its own")
	require.NoError(nw.vms[1].Disconnected(ctx, nw.keys[dead].NodeID))
	require.Zero(nw.refusal(1, msg))

	// The statement path is unchanged beside it.
	st, ok := certifier.Statement(5, chainID, nw.vms[1].Chain().LastAccepted().Block)
	require.True(ok)
	stMsg, err := st.Message()
	require.NoError(err)
	require.Zero(nw.refusal(1, stMsg), "the statement of an accepted block")
	st.Height++
	stMsg, err = st.Message()
	require.NoError(err)
	require.Equal(certifier.CodeNotAcceptedYet, nw.refusal(1, stMsg))
}

// TestL1RemovalByzantineRequesterCannotRemoveLiveValidator: four equal
// validators on the simulated chain; a removal of validator 3 stands in
// accepted state (say validator 0, Byzantine, censored its heartbeats),
// but 3 is alive and the honest validators 1 and 2 are connected to it.
// Validator 0 signs anything and asks everyone: the signatures it gathers
// carry 25% of the weight, and 50% if one honest validator lost 3, never
// the 67% the P-chain needs. Once 3 is gone from everyone's view, the
// three live validators' signatures carry 75%.
func TestL1RemovalByzantineRequesterCannotRemoveLiveValidator(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNetWith(t, 4, removalGenesis)
	const byzantine, target = 0, 3
	acceptAll(t, nw.decideRemoval(target))
	const total, each = 40, 10
	gathered := func(msg *warp.UnsignedMessage) uint64 {
		sum := uint64(each) // the Byzantine validator's own
		for i := range nw.vms {
			if i != byzantine && nw.refusal(i, msg) == 0 {
				sum += each
			}
		}
		return sum
	}
	quorum := func(w uint64) bool { return w*100 >= total*execute.WarpQuorum }
	for _, i := range []int{1, 2} {
		require.NoError(nw.vms[i].Connected(ctx, nw.keys[target].NodeID, version.Current))
	}
	for nonce := uint64(0); nonce < 4; nonce++ {
		w := gathered(nw.removalOf(target, nonce))
		require.Equal(uint64(each), w, "nonce %d: only its own signature", nonce)
		require.False(quorum(w))
	}
	require.NoError(nw.vms[1].Disconnected(ctx, nw.keys[target].NodeID))
	w := gathered(nw.removalOf(target, l1MinNonce))
	require.Equal(uint64(2*each), w)
	require.False(quorum(w), "one honest validator that lost the target is not enough")

	require.NoError(nw.vms[2].Disconnected(ctx, nw.keys[target].NodeID))
	w = gathered(nw.removalOf(target, l1MinNonce))
	require.Equal(uint64(3*each), w)
	require.True(quorum(w), "gone from every view: removed")
}
