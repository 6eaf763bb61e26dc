package benchmark

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindDuplicates(t *testing.T) {
	for _, c := range []struct {
		name        string
		ivs         []Interval
		overlapping int
		ids         uint64
	}{
		{name: "none", ivs: nil},
		{name: "adjacent intervals share nothing", ivs: []Interval{{0, 0, 5}, {0, 5, 10}, {0, 10, 11}}},
		{name: "the same ids in two ranges are fine", ivs: []Interval{{0, 0, 5}, {1, 0, 5}}},
		{name: "one id twice", ivs: []Interval{{0, 0, 5}, {0, 4, 8}}, overlapping: 1, ids: 1},
		{name: "the same allocation twice", ivs: []Interval{{2, 7, 9}, {2, 7, 9}}, overlapping: 1, ids: 2},
		{name: "nested, out of order", ivs: []Interval{{0, 3, 5}, {0, 0, 10}, {0, 4, 6}}, overlapping: 2, ids: 3},
		{name: "an id issued three times counts once", ivs: []Interval{{0, 0, 3}, {0, 1, 2}, {0, 1, 2}}, overlapping: 2, ids: 1},
		{name: "overlap with an earlier, longer interval", ivs: []Interval{{0, 0, 100}, {0, 10, 20}, {0, 50, 60}}, overlapping: 2, ids: 20},
		{name: "empty intervals are ignored", ivs: []Interval{{0, 5, 5}, {0, 0, 10}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require := require.New(t)
			d := FindDuplicates(c.ivs)
			require.Equal(c.overlapping, d.Overlapping)
			require.Equal(c.ids, d.IDs)
			require.Len(d.Examples, min(c.overlapping, maxExamples))
		})
	}
}

// TestFindDuplicatesMatchesBruteForce compares with counting every id on
// random small intervals.
func TestFindDuplicatesMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var ivs []Interval
		seen := map[[2]uint64]int{}
		overlapping := 0
		for i := 0; i < 1+rng.IntN(20); i++ {
			lo := rng.Uint64N(60)
			iv := Interval{Space: rng.IntN(2), Lo: lo, Hi: lo + 1 + rng.Uint64N(8)}
			ivs = append(ivs, iv)
			for id := iv.Lo; id < iv.Hi; id++ {
				seen[[2]uint64{uint64(iv.Space), id}]++
			}
		}
		var twice uint64
		for _, n := range seen {
			if n > 1 {
				twice++
			}
		}
		// An interval overlaps if it shares an id with one sorted before it.
		for i, a := range ivs {
			for j, b := range ivs {
				if i != j && a.Space == b.Space && a.Lo < b.Hi && b.Lo < a.Hi && before(b, a, j, i) {
					overlapping++
					break
				}
			}
		}
		d := FindDuplicates(ivs)
		require.Equal(t, twice, d.IDs, "round %d: %v", round, ivs)
		require.Equal(t, overlapping, d.Overlapping, "round %d: %v", round, ivs)
	}
}

// before is the sort order of FindDuplicates (space, lo, hi), ties by index.
func before(a, b Interval, i, j int) bool {
	if a.Lo != b.Lo {
		return a.Lo < b.Lo
	}
	if a.Hi != b.Hi {
		return a.Hi < b.Hi
	}
	return i < j
}

func TestIntervals(t *testing.T) {
	samples := []Sample{{Range: 3, First: 10, Count: 2}, {Range: 1, Failed: true}, {Range: 1, First: 0, Count: 1}}
	require.Equal(t, []Interval{{3, 10, 12}, {1, 0, 1}}, Intervals(samples, false))
	require.Equal(t, []Interval{{0, 10, 12}, {0, 0, 1}}, Intervals(samples, true))
}
