package execute_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/vm/execute"
)

// removalChain is a chain with removals on: K=1, a removal after two
// rounds out, at least two validators kept.
func removalChain(t *testing.T, w *world, minValidators uint64) *chain {
	c := newChain(t, w)
	c.rule = &execute.Liveness{RoundMs: 1000, K: 1, Removal: execute.Removal{Rounds: 2, MinValidators: minValidators}}
	c.rules = execute.Rules{LivenessGaps: true, Removals: true}
	return c
}

func removal(t *testing.T, c *chain, w *world, i int) (state.Removal, bool) {
	t.Helper()
	r, ok, err := c.s.Accepted().Removal(w.keys[i].NodeID)
	require.NoError(t, err)
	return r, ok
}

func out(t *testing.T, c *chain, w *world, i int) uint64 {
	t.Helper()
	rec, ok, err := c.s.Accepted().Liveness(w.keys[i].NodeID)
	require.NoError(t, err)
	require.True(t, ok)
	return rec.Out
}

// TestL1RemovalDecidedAfterRoundsOut: a validator that stops heartbeating
// leaves the membership after K+1 rounds with blocks, and the chain decides
// its removal once it has been out for Removal.Rounds more; the decision
// names the round, the P-chain height and its weight.
func TestL1RemovalDecidedAfterRoundsOut(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 4)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
	c := removalChain(t, w, 2)

	c.block(v, 100, 0, 1, 2, 3)
	c.block(v, 101, 0, 1, 2, 3)
	c.block(v, 102, 0, 1, 2) // 3 dies
	e := c.block(v, 103, 0, 1, 2)
	require.Equal(w.ids(0, 1, 2), members(e), "3 is out after K+1 rounds")
	require.Equal(uint64(1), out(t, c, w, 3))
	_, ok := removal(t, c, w, 3)
	require.False(ok, "one round out is not enough")

	c.block(v, 104, 0, 1, 2)
	r, ok := removal(t, c, w, 3)
	require.True(ok, "two rounds out: decided")
	require.Equal(state.Removal{Round: 104, PChainHeight: 10, Weight: 10}, r)
	for _, i := range []int{0, 1, 2} {
		_, ok := removal(t, c, w, i)
		require.False(ok)
		require.Zero(out(t, c, w, i))
	}
	c.block(v, 105, 0, 1, 2)
	r2, ok := removal(t, c, w, 3)
	require.True(ok)
	require.Equal(r, r2, "decided once, not again every round")
}

// TestRemovalCancelledWhenTheValidatorReturns: a validator decided for
// removal that heartbeats again before the P-chain removed it is a member
// again; its decision is deleted and its count starts over, so a flapping
// validator is removed only after it stays away again.
func TestRemovalCancelledWhenTheValidatorReturns(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 4)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
	c := removalChain(t, w, 2)
	for round := uint64(100); round <= 102; round++ {
		c.block(v, round, 0, 1, 2)
	}
	c.block(v, 103, 0, 1, 2)
	c.block(v, 104, 0, 1, 2, 3) // decided at the opening; 3's heartbeat lands
	_, ok := removal(t, c, w, 3)
	require.True(ok)

	e := c.block(v, 105, 0, 1, 2, 3)
	require.Equal(w.ids(0, 1, 2, 3), members(e))
	_, ok = removal(t, c, w, 3)
	require.False(ok, "a member again: the decision is cancelled")
	require.Zero(out(t, c, w, 3))
	c.block(v, 106, 0, 1, 2) // 3 leaves again
	c.block(v, 107, 0, 1, 2)
	require.Equal(uint64(1), out(t, c, w, 3))
	_, ok = removal(t, c, w, 3)
	require.False(ok, "out for one round only since it came back")
}

// TestRemovalGuards: the chain never decides a removal the live members
// cannot sign (less than the Warp quorum, 67% of the set's weight), nor
// one that would leave fewer than MinValidators, nor any in a fallback
// round; rounds without a block do not count.
func TestRemovalGuards(t *testing.T) {
	t.Run("live members below the Warp quorum", func(t *testing.T) {
		require := require.New(t)
		w := newWorld(t, 4)
		v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
		c := removalChain(t, w, 1)
		for round := uint64(100); round <= 106; round++ {
			c.block(v, round, 0, 1) // 2 and 3 never heartbeat: 50% live
		}
		for _, i := range []int{2, 3} {
			_, ok := removal(t, c, w, i)
			require.False(ok, "half the weight cannot sign a removal")
			require.Positive(out(t, c, w, i))
		}
	})
	t.Run("minimum validators", func(t *testing.T) {
		require := require.New(t)
		w := newWorld(t, 3)
		v := w.set(10, map[int]uint64{0: 40, 1: 40, 2: 10})
		c := removalChain(t, w, 3)
		for round := uint64(100); round <= 106; round++ {
			c.block(v, round, 0, 1)
		}
		_, ok := removal(t, c, w, 2)
		require.False(ok, "three validators and a minimum of three")
	})
	t.Run("one at a time down to the minimum", func(t *testing.T) {
		require := require.New(t)
		w := newWorld(t, 5)
		v := w.set(10, map[int]uint64{0: 40, 1: 40, 2: 40, 3: 1, 4: 1})
		c := removalChain(t, w, 4)
		for round := uint64(100); round <= 106; round++ {
			c.block(v, round, 0, 1, 2)
		}
		_, ok3 := removal(t, c, w, 3)
		_, ok4 := removal(t, c, w, 4)
		require.True(ok3 != ok4, "one removal leaves four validators; a second would leave three")
	})
	t.Run("rounds without a block do not count", func(t *testing.T) {
		require := require.New(t)
		w := newWorld(t, 4)
		v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
		c := removalChain(t, w, 2)
		c.block(v, 100, 0, 1, 2, 3)
		c.block(v, 101, 0, 1, 2, 3)
		c.block(v, 102, 0, 1, 2)
		c.block(v, 103, 0, 1, 2)
		c.block(v, 150, 0, 1, 2) // 46 rounds without a block
		require.Equal(uint64(2), out(t, c, w, 3), "two rounds that had a block")
		c.block(v, 150)
		require.Equal(uint64(2), out(t, c, w, 3), "counted once per round")
	})
	t.Run("no decision in a fallback round", func(t *testing.T) {
		require := require.New(t)
		w := newWorld(t, 4)
		v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
		c := removalChain(t, w, 1)
		c.block(v, 100, 0, 1, 2, 3)
		for round := uint64(101); round <= 106; round++ {
			c.block(v, round) // nobody's heartbeat lands
		}
		for i := range 4 {
			_, ok := removal(t, c, w, i)
			require.False(ok)
		}
	})
}

// TestRemovalsWaitForTheirActivation: before upgrades.removalsHeight no
// count is kept and nothing is decided, so the records of a chain whose
// genesis predates the change keep their bytes.
func TestRemovalsWaitForTheirActivation(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 4)
	v := w.set(10, map[int]uint64{0: 10, 1: 10, 2: 10, 3: 10})
	c := removalChain(t, w, 2)
	c.rules.Removals = false
	for round := uint64(100); round <= 106; round++ {
		c.block(v, round, 0, 1, 2)
	}
	require.Zero(out(t, c, w, 3))
	_, ok := removal(t, c, w, 3)
	require.False(ok)
}
