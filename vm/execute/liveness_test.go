package execute_test

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

var rule = execute.Liveness{RoundMs: 1000, K: 2}

// chain runs blocks of (P-chain set, round, heartbeats) through execution on
// accepted state, the way the VM does, and returns each block's epoch.
type chain struct {
	t *testing.T
	w *world
	s *state.State
	h uint64
	// rule, if set, replaces the package's rule.
	rule *execute.Liveness
}

func newChain(t *testing.T, w *world) *chain {
	s, l := fresh(t)
	_, err := l.Seal()
	require.NoError(t, err)
	require.NoError(t, s.Accept(l, ids.ID{'1'}, nil))
	return &chain{t: t, w: w, s: s, h: 1}
}

// block executes a block of round with the P-chain set v carrying a
// heartbeat from each of the given key indexes, accepts it and returns the
// epoch it executed under.
func (c *chain) block(v *execute.ValidatorSet, round uint64, beats ...int) *execute.Membership {
	rule := rule
	if c.rule != nil {
		rule = *c.rule
	}
	l, err := c.s.NewLayer(nil)
	require.NoError(c.t, err)
	ctx := &execute.Context{NetworkID: testNetwork, ChainID: testChain, Limits: txs.DefaultLimits(),
		Validators: v, Round: round, Liveness: rule, Height: c.h + 1}
	require.NoError(c.t, execute.Open(l, ctx))
	var blockTxs []*txs.Tx
	for _, i := range beats {
		c.w.nonce++
		tx, err := c.w.keys[i].Sign(&txs.HeartbeatTx{Header: txs.Header{
			NetworkID: testNetwork, ChainID: testChain, PChainHeight: v.Height(), Owner: c.w.keys[i].NodeID, Nonce: c.w.nonce, Round: round,
		}})
		require.NoError(c.t, err)
		blockTxs = append(blockTxs, tx)
	}
	e := ctx.Membership
	l2, err := c.s.NewLayer(nil)
	require.NoError(c.t, err)
	require.NoError(c.t, execute.Block(l2, &execute.Context{NetworkID: testNetwork, ChainID: testChain, Limits: txs.DefaultLimits(),
		Validators: v, Round: round, Liveness: rule, Height: c.h + 1}, blockTxs))
	_, err = l2.Seal()
	require.NoError(c.t, err)
	c.s.Reject(l)
	c.h++
	require.NoError(c.t, c.s.Accept(l2, ids.ID{byte(c.h), 'b'}, nil))
	return e
}

func members(e interface{ Members() []pinning.Member }) []ids.NodeID {
	var out []ids.NodeID
	for _, m := range e.Members() {
		out = append(out, m.NodeID)
	}
	return out
}

func (w *world) ids(idx ...int) []ids.NodeID {
	e := w.epoch(999, func() map[int]uint64 {
		m := map[int]uint64{}
		for _, i := range idx {
			m[i] = 1
		}
		return m
	}())
	return members(e)
}

func TestMembershipFollowsHeartbeats(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 4)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10})
	c := newChain(t, w)

	e := c.block(v, 100)
	require.Equal(w.ids(0, 1, 2), members(e), "everyone starts in its grace")
	require.Equal(uint64(0), e.Record().Generation)
	first := e.Fingerprint()

	// Rounds 101 and 102: grace (first seen 100, K=2) still holds; 0 and 1
	// heartbeat.
	require.Equal(first, c.block(v, 101, 0, 1).Fingerprint())
	require.Equal(first, c.block(v, 102, 0, 1).Fingerprint(), "same members, same fingerprint: no re-pinning churn")
	// Round 103: 2's grace is over and it never heartbeat.
	e = c.block(v, 103, 0)
	require.Equal(w.ids(0, 1), members(e))
	require.Equal(uint64(1), e.Record().Generation)
	// Frozen for the epoch: a later block of 103 keeps the set although 2
	// heartbeats now.
	e = c.block(v, 103, 2)
	require.Equal(w.ids(0, 1), members(e), "a membership is frozen for its epoch")
	// Round 104: 2's heartbeat (103) counts; 1's last one (102) is within K.
	e = c.block(v, 104)
	require.Equal(w.ids(0, 1, 2), members(e))
	require.Equal(uint64(2), e.Record().Generation)
	require.NotEqual(first, e.Fingerprint(), "the same set under a new generation has a new fingerprint")

	// A validator new to the P-chain set gets K epochs of grace from the
	// first membership that sees it.
	v2 := w.set(11, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
	e = c.block(v2, 105, 0, 2)
	require.Equal(w.ids(0, 2, 3), members(e), "3 is in its grace; 1's last heartbeat (102) is more than K=2 epochs old")
}

func TestMembershipNeverEmpty(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 3)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10})
	c := newChain(t, w)
	// Blocks, but no heartbeat ever: the grace of round 1 ends (K=2).
	c.block(v, 1)
	c.block(v, 2)
	c.block(v, 3)
	e := c.block(v, 4)
	require.True(e.Record().Fallback)
	require.Equal(w.ids(0, 1, 2), members(e))
}

// TestFallbackKeepsThePreviousMembers: a round with no live validator
// (the blocks of the last K rounds that had any carried no heartbeat: they
// were built before the heartbeats reached their proposers, or by one that
// left them out) keeps the previous members instead of giving a dead
// validator its ranges back, and changes no generation.
func TestFallbackKeepsThePreviousMembers(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 4)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10})
	c := newChain(t, w)
	c.block(v, 100, 0, 1)
	c.block(v, 102, 0, 1)
	e := c.block(v, 103)
	require.Equal(w.ids(0, 1), members(e), "2 never heartbeat")
	require.False(e.Record().Fallback)
	// Rounds 104 to 110 pass without a block: they count for nobody.
	quiet := c.block(v, 111)
	require.False(quiet.Record().Fallback, "a stalled chain is not a dead membership")
	require.Equal(w.ids(0, 1), members(quiet))
	// Round 111's blocks carry no heartbeat: in 112 nobody is live.
	stalled := c.block(v, 112)
	require.True(stalled.Record().Fallback)
	require.Equal(w.ids(0, 1), members(stalled), "the dead validator does not get its ranges back")
	require.Equal(e.Fingerprint(), stalled.Fingerprint(), "same members, same generation: nothing to re-pin")
	// The heartbeats of round 112 count from 113 on.
	c.block(v, 112, 0, 1, 2)
	back := c.block(v, 113)
	require.False(back.Record().Fallback)
	require.Equal(w.ids(0, 1, 2), members(back))

	// When none of the previous members is left in the P-chain set, it is
	// the whole set.
	c = newChain(t, w)
	c.block(v, 100)
	c.block(v, 102, 0, 1)
	require.Equal(w.ids(0, 1), members(c.block(v, 103)))
	v2 := w.set(11, map[int]uint64{2: 10})
	gone := c.block(v2, 104)
	require.True(gone.Record().Fallback)
	require.Equal(w.ids(2), members(gone))
}

func TestMembershipRoundNeverGoesBack(t *testing.T) {
	w := newWorld(t, 2)
	v := w.set(10, map[int]uint64{0: 1, 1: 1})
	c := newChain(t, w)
	c.block(v, 7)
	l, err := c.s.NewLayer(nil)
	require.NoError(t, err)
	err = execute.Open(l, &execute.Context{Validators: v, Round: 6, Liveness: rule})
	require.ErrorIs(t, err, execute.ErrRoundBackward)
}

// TestRoundsWithoutBlocksDoNotKeepTheDead: rounds as short as the proposer
// VM's 5 s slot pass without a block while a dead validator is the
// expected proposer. Such rounds carry no heartbeat of anybody, so they do
// not count against the live validators; the dead one leaves after K+1
// rounds that had blocks, even when every other round is empty. (Counting
// the empty rounds made every live validator look dead in the round after
// one, the whole round fell back to the previous members, and the dead
// validator stayed for as long as rounds kept alternating: 32 s with 5 s
// rounds in make bench.)
func TestRoundsWithoutBlocksDoNotKeepTheDead(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 3)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10})
	c := newChain(t, w)
	k1 := execute.Liveness{RoundMs: 1000, K: 1}
	c.rule = &k1
	c.block(v, 100, 0, 1, 2)
	c.block(v, 101, 0, 1, 2)
	require.Equal(w.ids(0, 1, 2), members(c.block(v, 102, 0, 1, 2)))
	// 2 dies during 102 (its heartbeat of 102 landed). Rounds 103, 105
	// and 107 have no block.
	e := c.block(v, 104, 0, 1)
	require.False(e.Record().Fallback, "an empty round is nobody's fault")
	require.Equal(w.ids(0, 1, 2), members(e), "2's heartbeat of 102, the last round with a block, still counts")
	e = c.block(v, 106, 0, 1)
	require.False(e.Record().Fallback)
	require.Equal(w.ids(0, 1), members(e), "two rounds with blocks without 2's heartbeat: it is out")
	e = c.block(v, 108, 0, 1)
	require.Equal(w.ids(0, 1), members(e))
	require.False(e.Record().Fallback)
	// Every round has a block again: the rule is the usual one.
	require.Equal(w.ids(0, 1), members(c.block(v, 109, 0, 1)))
	require.Equal(w.ids(0, 1), members(c.block(v, 110, 0)))
	require.Equal(w.ids(0), members(c.block(v, 111, 0)), "1 missed 110, a round with a block")
}
