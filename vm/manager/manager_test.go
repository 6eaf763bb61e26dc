package manager_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/manager"
)

const networkID = 5

var (
	chainID  = ids.ID{'s', 'c'}
	subnetID = ids.ID{'s', 'n'}
)

// current is a fake P-chain's current validator set of the subnet.
type current struct {
	set map[ids.ID]*validators.GetCurrentValidatorOutput
	err error
}

func (c current) GetCurrentValidatorSet(_ context.Context, s ids.ID) (map[ids.ID]*validators.GetCurrentValidatorOutput, uint64, error) {
	if c.err != nil {
		return nil, 0, c.err
	}
	if s != subnetID {
		return nil, 0, nil
	}
	return c.set, 100, nil
}

// decisions is a fake accepted state's removal decisions.
type decisions map[ids.NodeID]state.Removal

func (d decisions) Removal(n ids.NodeID) (state.Removal, bool, error) {
	r, ok := d[n]
	return r, ok, nil
}

// peers is a fake view of connected nodes.
type peers set.Set[ids.NodeID]

func (p peers) Has(n ids.NodeID) bool {
	s := set.Set[ids.NodeID](p)
	return s.Contains(n)
}

// l1 is four L1 validators of weight 10 with MinNonce 3, nodes[i]
// validating as vids[i].
type l1 struct {
	nodes []ids.NodeID
	vids  []ids.ID
	set   map[ids.ID]*validators.GetCurrentValidatorOutput
}

func newL1(n int) l1 {
	w := l1{set: map[ids.ID]*validators.GetCurrentValidatorOutput{}}
	for i := range n {
		node, vid := ids.BuildTestNodeID([]byte{'n', byte(i)}), ids.ID{'v', byte(i)}
		w.nodes, w.vids = append(w.nodes, node), append(w.vids, vid)
		w.set[vid] = &validators.GetCurrentValidatorOutput{ValidationID: vid, NodeID: node, Weight: 10, MinNonce: 3, IsActive: true, IsL1Validator: true}
	}
	return w
}

// rule is node i's rule: its accepted state holds d, it is connected to
// connected.
func (w l1) rule(i int, d decisions, connected ...ids.NodeID) *manager.Rule {
	return manager.New(manager.Config{
		NetworkID: networkID, ChainID: chainID, SubnetID: subnetID, NodeID: w.nodes[i],
		Validators: current{set: w.set}, Decisions: d, Peers: peers(set.Of(connected...)),
	})
}

func removal(t *testing.T, vid ids.ID, nonce uint64) *warp.UnsignedMessage {
	msg, err := manager.RemovalMessage(networkID, chainID, vid, nonce)
	require.NoError(t, err)
	return msg
}

// weightMessage is an L1ValidatorWeight message built by hand, with any
// envelope, address and weight.
func weightMessage(t *testing.T, network uint32, chain ids.ID, address string, vid ids.ID, nonce, weight uint64) *warp.UnsignedMessage {
	w, err := message.NewL1ValidatorWeight(vid, nonce, weight)
	require.NoError(t, err)
	call, err := payload.NewAddressedCall([]byte(address), w.Bytes())
	require.NoError(t, err)
	msg, err := warp.NewUnsignedMessage(network, chain, call.Bytes())
	require.NoError(t, err)
	return msg
}

// TestL1RemovalMessageIsWhatThePChainParses: the builder's message, as
// bytes, parses the way SetL1ValidatorWeightTx parses it: an AddressedCall
// from the manager address carrying the validation ID, nonce and weight 0.
func TestL1RemovalMessageIsWhatThePChainParses(t *testing.T) {
	require := require.New(t)
	vid := ids.ID{'v', 1}
	msg := removal(t, vid, 7)
	parsed, err := warp.ParseUnsignedMessage(msg.Bytes())
	require.NoError(err)
	require.Equal(uint32(networkID), parsed.NetworkID)
	require.Equal(chainID, parsed.SourceChainID)
	call, err := payload.ParseAddressedCall(parsed.Payload)
	require.NoError(err)
	require.Equal([]byte(manager.Address), call.SourceAddress)
	w, err := message.ParseL1ValidatorWeight(call.Payload)
	require.NoError(err)
	require.NoError(w.Verify())
	require.Equal(vid, w.ValidationID)
	require.Equal(uint64(7), w.Nonce)
	require.Zero(w.Weight)

	r := manager.New(manager.Config{})
	require.True(r.Claims(msg))
	require.True(r.Claims(weightMessage(t, 1, ids.Empty, "other", vid, 1, 5)), "any weight message is the rule's to judge (and refuse)")
	other, err := warp.NewUnsignedMessage(networkID, chainID, []byte("schain/certificate/v1..."))
	require.NoError(err)
	require.False(r.Claims(other), "a statement is not")
}

// TestL1RemovalSignedForAcceptedDecision: a removal of a validator the
// accepted state decided to remove, that this node is not connected to,
// at a nonce the P-chain takes, is signed; the rule says what it read.
func TestL1RemovalSignedForAcceptedDecision(t *testing.T) {
	require := require.New(t)
	w := newL1(4)
	decided := state.Removal{Round: 104, PChainHeight: 10, Weight: 10}
	r := w.rule(0, decisions{w.nodes[3]: decided}, w.nodes[1], w.nodes[2])
	for _, nonce := range []uint64{3, 4, 1 << 40} {
		got, appErr := r.Check(context.Background(), removal(t, w.vids[3], nonce))
		require.Nil(appErr, "nonce %d", nonce)
		require.Equal(manager.Removal{ValidationID: w.vids[3], NodeID: w.nodes[3], Nonce: nonce, Decision: decided}, got)
		require.Nil(r.Verify(context.Background(), removal(t, w.vids[3], nonce), nil))
	}
}

// TestL1RemovalRefusals: every condition of the rule, broken alone, is
// refused with its code.
func TestL1RemovalRefusals(t *testing.T) {
	w := newL1(4)
	vid := w.vids[3]
	d := decisions{w.nodes[3]: {Round: 104, PChainHeight: 10, Weight: 10}}
	ok := manager.Config{
		NetworkID: networkID, ChainID: chainID, SubnetID: subnetID, NodeID: w.nodes[0],
		Validators: current{set: w.set}, Decisions: d, Peers: peers(set.Of(w.nodes[1]))}
	notL1 := map[ids.ID]*validators.GetCurrentValidatorOutput{vid: {ValidationID: vid, NodeID: w.nodes[3], Weight: 10}}
	cases := []struct {
		name string
		cfg  func(c *manager.Config)
		msg  *warp.UnsignedMessage
		code int32
	}{
		{name: "another network", msg: weightMessage(t, networkID+1, chainID, manager.Address, vid, 3, 0), code: manager.CodeNotManager},
		{name: "another chain", msg: weightMessage(t, networkID, ids.ID{'x'}, manager.Address, vid, 3, 0), code: manager.CodeNotManager},
		{name: "another address", msg: weightMessage(t, networkID, chainID, "0x1234", vid, 3, 0), code: manager.CodeNotManager},
		{name: "not a weight message", msg: func() *warp.UnsignedMessage {
			m, err := warp.NewUnsignedMessage(networkID, chainID, []byte("schain/certificate/v1"))
			require.NoError(t, err)
			return m
		}(), code: manager.CodeNotManager},
		{name: "weight not 0", msg: weightMessage(t, networkID, chainID, manager.Address, vid, 3, 5), code: manager.CodeNotRemoval},
		{name: "unknown validation ID", msg: removal(t, ids.ID{'?'}, 3), code: manager.CodeUnknownValidation},
		{name: "not an L1 validator", cfg: func(c *manager.Config) { c.Validators = current{set: notL1} }, msg: removal(t, vid, 3), code: manager.CodeUnknownValidation},
		{name: "nonce below MinNonce", msg: removal(t, vid, 2), code: manager.CodeStaleNonce},
		{name: "P-chain unreadable", cfg: func(c *manager.Config) { c.Validators = current{err: errors.New("down")} }, msg: removal(t, vid, 3), code: manager.CodeNoValidators},
		{name: "no P-chain source", cfg: func(c *manager.Config) { c.Validators = nil }, msg: removal(t, vid, 3), code: manager.CodeNoValidators},
		{name: "no decision", cfg: func(c *manager.Config) { c.Decisions = decisions{} }, msg: removal(t, vid, 3), code: manager.CodeNoDecision},
		{name: "decision about another node", msg: removal(t, w.vids[2], 3), code: manager.CodeNoDecision},
		{name: "connected to the validator", cfg: func(c *manager.Config) { c.Peers = peers(set.Of(w.nodes[3])) }, msg: removal(t, vid, 3), code: manager.CodeConnected},
		{name: "no view of peers", cfg: func(c *manager.Config) { c.Peers = nil }, msg: removal(t, vid, 3), code: manager.CodeConnected},
		{name: "its own removal", cfg: func(c *manager.Config) { c.NodeID = w.nodes[3] }, msg: removal(t, vid, 3), code: manager.CodeConnected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			appErr := manager.New(cfg).Verify(context.Background(), tc.msg, nil)
			require.NotNil(t, appErr)
			require.Equal(t, tc.code, appErr.Code, appErr.Message)
			require.Contains(t, appErr.Message, "manager: ")
		})
	}
	require.Nil(t, manager.New(ok).Verify(context.Background(), removal(t, vid, 3), nil), "and all of them together sign")
}

// signedWeight is the weight of the signatures a requester gathers on msg
// from nodes with these rules, plus the Byzantine nodes' own (they sign
// anything).
func signedWeight(t *testing.T, w l1, rules map[int]*manager.Rule, byzantine []int, msg *warp.UnsignedMessage) uint64 {
	var sum uint64
	for _, i := range byzantine {
		sum += w.set[w.vids[i]].Weight
	}
	for i, r := range rules {
		if r.Verify(context.Background(), msg, nil) == nil {
			sum += w.set[w.vids[i]].Weight
		}
	}
	return sum
}

// quorum: the P-chain takes a Warp message whose signers hold
// execute.WarpQuorum percent of the weight.
func quorum(part, total uint64) bool { return part*100 >= total*execute.WarpQuorum }

// TestL1RemovalByzantineRequesterCannotRemoveLiveValidator: four equal
// validators; the Byzantine validator 0 got a removal of validator 3
// decided in the accepted state (it censored 3's heartbeats), but 3 is
// alive, and the honest validators 1 and 2 are connected to it. Whatever
// 0 asks, it gathers 0's and no honest signature: 25% of the weight, below
// the 67% the P-chain needs. Even with one honest validator cut off from
// 3 it has 50%. Once 3 is really gone (nobody is connected to it), the
// honest validators sign and the removal reaches the quorum.
func TestL1RemovalByzantineRequesterCannotRemoveLiveValidator(t *testing.T) {
	require := require.New(t)
	w := newL1(4)
	var total uint64
	for _, v := range w.set {
		total += v.Weight
	}
	d := decisions{w.nodes[3]: {Round: 104, PChainHeight: 10, Weight: 10}}
	msg := removal(t, w.vids[3], 3)
	byzantine := []int{0}

	live := map[int]*manager.Rule{
		1: w.rule(1, d, w.nodes[0], w.nodes[2], w.nodes[3]),
		2: w.rule(2, d, w.nodes[0], w.nodes[1], w.nodes[3]),
		3: w.rule(3, d, w.nodes[0], w.nodes[1], w.nodes[2]),
	}
	got := signedWeight(t, w, live, byzantine, msg)
	require.Equal(uint64(10), got, "only the Byzantine validator's own signature")
	require.False(quorum(got, total))

	cutOff := map[int]*manager.Rule{
		1: w.rule(1, d, w.nodes[0], w.nodes[2]), // partitioned from 3
		2: w.rule(2, d, w.nodes[0], w.nodes[1], w.nodes[3]),
		3: w.rule(3, d, w.nodes[0], w.nodes[1], w.nodes[2]),
	}
	got = signedWeight(t, w, cutOff, byzantine, msg)
	require.Equal(uint64(20), got)
	require.False(quorum(got, total), "one honest validator that lost 3 is not enough either")

	for nonce := uint64(0); nonce < 8; nonce++ {
		for _, m := range []*warp.UnsignedMessage{
			removal(t, w.vids[3], nonce), weightMessage(t, networkID, chainID, manager.Address, w.vids[3], nonce, 1),
		} {
			require.False(quorum(signedWeight(t, w, live, byzantine, m), total), "no nonce or weight gets a live validator out")
		}
	}

	dead := map[int]*manager.Rule{
		1: w.rule(1, d, w.nodes[0], w.nodes[2]),
		2: w.rule(2, d, w.nodes[0], w.nodes[1]),
	}
	got = signedWeight(t, w, dead, nil, msg)
	require.Equal(uint64(20), got)
	got = signedWeight(t, w, dead, byzantine, msg)
	require.True(quorum(got, total), "a dead validator is removed with the honest validators' signatures and one more")
	honest := map[int]*manager.Rule{0: w.rule(0, d, w.nodes[1], w.nodes[2]), 1: dead[1], 2: dead[2]}
	require.True(quorum(signedWeight(t, w, honest, nil, msg), total), "all three live validators honest: 75%")
}
