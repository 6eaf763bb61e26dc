package localnet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	vmconfig "github.com/s-chain/schain/vm/config"
)

// TestGenesisLiveness: the local network's genesis carries its liveness rule
// (or a setting the bench measures), a transaction lifetime of at least
// three proposer slots, and a failover bound under the 15 s of issue 14.
func TestGenesisLiveness(t *testing.T) {
	require := require.New(t)
	g, err := vmconfig.ParseGenesis(Genesis(0, 0, 0))
	require.NoError(err)
	require.Equal(uint64(RoundDuration.Milliseconds()), g.RoundDurationMs)
	require.Equal(uint64(LivenessRounds), g.LivenessRounds)
	require.GreaterOrEqual(time.Duration(g.TxLifetimeRounds)*RoundDuration, 15*time.Second)
	require.LessOrEqual(FailoverBound(0, 0), 15*time.Second)
	require.Equal(2*RoundDuration+500*time.Millisecond, FailoverBound(0, 0))

	g, err = vmconfig.ParseGenesis(Genesis(30*time.Second, 2, 4096))
	require.NoError(err)
	require.Equal(uint64(30_000), g.RoundDurationMs)
	require.Equal(uint64(2), g.LivenessRounds)
	require.Equal(uint64(2), g.TxLifetimeRounds)
	require.Equal(uint64(4096), g.PoolChunk)
	require.Equal(91*time.Second, FailoverBound(30*time.Second, 2))
}
