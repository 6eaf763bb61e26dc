package ports

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFreePortsAreDistinctBindableAndBelowTheEphemeralRange(t *testing.T) {
	require := require.New(t)
	got, err := Free(16)
	require.NoError(err)
	require.Len(got, 16)
	seen := map[int]bool{}
	for _, p := range got {
		require.False(seen[p], "port %d twice", p)
		seen[p] = true
		require.GreaterOrEqual(p, lowest)
		require.Less(p, ephemeralStart(), "outgoing connections draw from the ephemeral range")
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(err, "released for the child to bind")
		require.NoError(l.Close())
	}
}

func TestRunsAreConsecutiveAndDisjoint(t *testing.T) {
	require := require.New(t)
	firsts, err := Runs(8, 1, 8, 1)
	require.NoError(err)
	require.Len(firsts, 4)
	seen := map[int]bool{}
	for i, k := range []int{8, 1, 8, 1} {
		for p := firsts[i]; p < firsts[i]+k; p++ {
			require.False(seen[p], "port %d in two runs", p)
			seen[p] = true
			require.Less(p, ephemeralStart())
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			require.NoError(err)
			require.NoError(l.Close())
		}
	}
	_, err = Runs(0)
	require.Error(err)
}
