package shadow

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIntervalSetInsert(t *testing.T) {
	require := require.New(t)
	s := newIntervalSet(100)
	require.False(s.insert(10, 20, 1).any())
	require.False(s.insert(20, 30, 1).any())
	require.Equal([]interval{{10, 30, 1}}, s.ivs, "touching same-term intervals merge")
	require.False(s.insert(0, 5, 2).any())
	require.False(s.insert(30, 31, 2).any())
	require.Equal([]interval{{0, 5, 2}, {10, 30, 1}, {30, 31, 2}}, s.ivs)

	ov := s.insert(3, 12, 2)
	require.True(ov.sameTerm)
	require.True(ov.otherTerm)
	require.Equal(interval{0, 5, 2}, ov.first)
	require.Equal([]interval{{0, 10, 2}, {10, 30, 1}, {30, 31, 2}}, s.ivs, "only uncovered ids are added; old terms kept")

	ov = s.insert(25, 26, 5)
	require.Equal(overlap{otherTerm: true, first: interval{10, 30, 1}}, ov)
	require.False(s.insert(5, 5, 1).any(), "empty interval")
}

// TestIntervalSetMatchesModel checks overlap detection against a plain set of
// ids, with and without coarsening: coarsening may add overlaps, never hide
// one.
func TestIntervalSetMatchesModel(t *testing.T) {
	for _, limit := range []int{1 << 20, 8} {
		rng := rand.New(rand.NewPCG(1, uint64(limit)))
		s := newIntervalSet(limit)
		seen := map[uint64]bool{}
		for range 2000 {
			lo := rng.Uint64N(3000)
			hi := lo + 1 + rng.Uint64N(5)
			want := false
			for id := lo; id < hi; id++ {
				want = want || seen[id]
				seen[id] = true
			}
			got := s.insert(lo, hi, rng.Uint64N(3)).any()
			if limit > 100 {
				require.Equal(t, want, got, "[%d,%d)", lo, hi)
			} else if want {
				require.True(t, got, "[%d,%d) overlap hidden by coarsening", lo, hi)
			}
			require.LessOrEqual(t, s.len(), limit)
			require.True(t, sortedDisjoint(s.ivs), "sorted and disjoint")
		}
	}
}

func sortedDisjoint(ivs []interval) bool {
	for i := 1; i < len(ivs); i++ {
		if ivs[i-1].hi > ivs[i].lo {
			return false
		}
	}
	return true
}
