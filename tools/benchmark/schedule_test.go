package benchmark

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScheduleInterleavesAndCounterbalances(t *testing.T) {
	require := require.New(t)
	s := Schedule(3, 2)
	require.Equal([]Slot{{0, 0}, {0, 1}, {0, 2}, {1, 2}, {1, 1}, {1, 0}}, s)

	const systems, rounds = 4, 4
	s = Schedule(systems, rounds)
	require.Len(s, systems*rounds)
	positions := make([]int, systems)
	for k, slot := range s {
		require.Equal(k/systems, slot.Round, "rounds run one after the other")
		positions[slot.System] += k
	}
	for r := 0; r < rounds; r++ {
		seen := map[int]bool{}
		for _, slot := range s[r*systems : (r+1)*systems] {
			seen[slot.System] = true
		}
		require.Len(seen, systems, "every system once per round")
	}
	// With an even number of rounds every system has the same mean
	// position, so a linear drift favours none.
	for i := 1; i < systems; i++ {
		require.Equal(positions[0], positions[i])
	}
	require.Empty(Schedule(0, 3))
}
