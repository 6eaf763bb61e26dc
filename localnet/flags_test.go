package localnet

import (
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/utils/compression"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/stretchr/testify/require"
)

// TestNodeFlags: the settings that cut the nodes' load-independent work
// are there and valid, the consensus parameters stay, and extra flags win.
func TestNodeFlags(t *testing.T) {
	require := require.New(t)
	flags := nodeFlags(Snow(4), nil)

	frontier, err := time.ParseDuration(flags[config.ConsensusFrontierPollFrequencyKey])
	require.NoError(err)
	require.Greater(frontier, constants.DefaultFrontierPollFrequency)
	tracker, err := time.ParseDuration(flags[config.SystemTrackerFrequencyKey])
	require.NoError(err)
	require.Greater(tracker, 500*time.Millisecond, "avalanchego's default")
	ct, err := compression.TypeFromString(flags[config.NetworkCompressionTypeKey])
	require.NoError(err)
	require.Equal(compression.TypeNone, ct)
	require.Equal("12", flags[config.SnowCommitThresholdKey])

	flags = nodeFlags(Snow(4), map[string]string{config.NetworkCompressionTypeKey: "zstd"})
	require.Equal("zstd", flags[config.NetworkCompressionTypeKey])
}
