package execute_test

import (
	"math/rand/v2"
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
	// rules are the scheduled changes every block executes with.
	rules execute.Rules
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
		Validators: v, Round: round, Liveness: rule, Rules: c.rules, Height: c.h + 1}
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
		Validators: v, Round: round, Liveness: rule, Rules: c.rules, Height: c.h + 1}, blockTxs))
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

// TestGraceCountsOnlyRoundsWithBlocks: with K=2 and every other round
// empty, a validator whose heartbeats stop stays a member for K+1 = 3
// rounds with blocks, its heartbeat's included, as when every round has a
// block. Before the LivenessGaps rule only the gap right before a block was
// discounted, and it left after 2.
func TestGraceCountsOnlyRoundsWithBlocks(t *testing.T) {
	run := func(t *testing.T, rules execute.Rules) (at106, at108 []ids.NodeID) {
		w := newWorld(t, 3)
		v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10})
		c := newChain(t, w)
		c.rules = rules
		c.block(v, 100, 0, 1, 2)
		c.block(v, 101, 0, 1, 2)
		c.block(v, 102, 0, 1, 2)
		// 2 dies after its heartbeat of 102; rounds 103, 105, 107 are empty.
		require.Equal(t, w.ids(0, 1, 2), members(c.block(v, 104, 0, 1)))
		at106 = members(c.block(v, 106, 0, 1))
		at108 = members(c.block(v, 108, 0, 1))
		return at106, at108
	}
	t.Run("activated", func(t *testing.T) {
		w := newWorld(t, 3)
		at106, at108 := run(t, execute.Rules{LivenessGaps: true})
		require.Equal(t, w.ids(0, 1, 2), at106, "102 is one of the last K=2 rounds with a block before 106")
		require.Equal(t, w.ids(0, 1), at108, "three rounds with blocks without its heartbeat: out")
	})
	t.Run("before its height", func(t *testing.T) {
		w := newWorld(t, 3)
		at106, _ := run(t, execute.Rules{})
		require.Equal(t, w.ids(0, 1), at106, "the rule of the code before the change, kept until its activation height")
	})
}

// TestGraceAcrossTheActivation: the first memberships opened under the
// rule follow records written before it, which carry no rounds with
// blocks; they keep the old measure until a record has them, and the
// records' bytes before the activation are the old ones.
func TestGraceAcrossTheActivation(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 3)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10})
	c := newChain(t, w)
	c.block(v, 100, 0, 1, 2)
	old := c.block(v, 102, 0, 1, 2)
	require.Empty(old.Record().BlockRounds, "nothing new is written before the activation")
	c.rules = execute.Rules{LivenessGaps: true}
	first := c.block(v, 104, 0, 1)
	require.Equal([]uint64{104}, first.Record().BlockRounds, "the history starts at the activation")
	require.Equal(w.ids(0, 1, 2), members(first))
	second := c.block(v, 106, 0, 1)
	require.Equal([]uint64{106, 104}, second.Record().BlockRounds)
	require.Equal(w.ids(0, 1, 2), members(second), "fewer than K rounds recorded before 106: 104 is one of the last K rounds with a block, 102 the other")
	third := c.block(v, 108, 0, 1)
	require.Equal([]uint64{108, 106, 104}, third.Record().BlockRounds, "K+1 rounds kept")
	require.Equal(w.ids(0, 1), members(third))
	require.Equal([]uint64{110, 108, 106}, c.block(v, 110, 0, 1).Record().BlockRounds, "and no more")
}

// TestGraceMatchesTheWholeHistory checks the rule against a model that
// keeps every round that had a block (the record keeps only K+1): over
// random chains with empty rounds, new P-chain heights within a round and
// heartbeats that stop, a validator is a member exactly when its last
// heartbeat or first appearance is no older than the K-th round with a
// block before the block's round.
func TestGraceMatchesTheWholeHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 60 {
		k := uint64(1 + trial%3)
		rule := execute.Liveness{RoundMs: 1000, K: k}
		w := newWorld(t, 4)
		c := newChain(t, w)
		c.rule = &rule
		c.rules = execute.Rules{LivenessGaps: true}
		var (
			blockRounds []uint64 // every round with a block, oldest first
			lastSeen    = map[int]uint64{}
			height      = uint64(10)
			stopped     = map[int]uint64{}
			lastBeat    = map[int]uint64{} // one heartbeat per validator and round
			frozen      struct {
				round, height uint64
				want          []int
			}
		)
		for i := range 4 {
			stopped[i] = 100 + rng.Uint64N(40) // heartbeats stop after this round
		}
		for round := uint64(100); round < 150; round++ {
			if rng.IntN(3) == 0 {
				continue // a round without a block
			}
			for range 1 + rng.IntN(2) { // sometimes a new P-chain height within the round
				if rng.IntN(4) == 0 {
					height++
				}
				v := w.set(height, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
				var beats []int
				for i := range 4 {
					if round <= stopped[i] && lastBeat[i] != round && rng.IntN(5) != 0 {
						beats = append(beats, i)
					}
				}
				var before []uint64 // rounds with a block before this one, newest first
				for j := len(blockRounds) - 1; j >= 0; j-- {
					if blockRounds[j] < round {
						before = append(before, blockRounds[j])
					}
				}
				from := uint64(0)
				if uint64(len(before)) >= k {
					from = before[k-1]
				}
				var want []int
				for i := range 4 {
					seen, ok := lastSeen[i]
					if !ok {
						seen = round // first seen now
					}
					if seen >= from {
						want = append(want, i)
					}
				}
				if frozen.round == round && frozen.height == height {
					want = frozen.want // a membership is frozen for its (P-chain height, round)
				}
				frozen.round, frozen.height, frozen.want = round, height, want
				e := c.block(v, round, beats...)
				if !e.Record().Fallback {
					require.Equal(t, w.ids(want...), members(e), "trial %d, K=%d, round %d", trial, k, round)
				}
				if len(blockRounds) == 0 || blockRounds[len(blockRounds)-1] != round {
					blockRounds = append(blockRounds, round)
				}
				for i := range 4 {
					if _, ok := lastSeen[i]; !ok {
						lastSeen[i] = round
					}
				}
				for _, i := range beats {
					lastSeen[i], lastBeat[i] = round, round
				}
			}
		}
	}
}
