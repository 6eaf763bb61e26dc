package localnet

import (
	"fmt"
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
	flags := NodeFlags(Snow(4), nil)

	frontier, err := time.ParseDuration(flags[config.ConsensusFrontierPollFrequencyKey])
	require.NoError(err)
	require.Greater(frontier, constants.DefaultFrontierPollFrequency)
	tracker, err := time.ParseDuration(flags[config.SystemTrackerFrequencyKey])
	require.NoError(err)
	require.Greater(tracker, 500*time.Millisecond, "avalanchego's default")
	ct, err := compression.TypeFromString(flags[config.NetworkCompressionTypeKey])
	require.NoError(err)
	require.Equal(compression.TypeNone, ct)
	require.Equal(fmt.Sprint(Snow(4)["beta"]), flags[config.SnowCommitThresholdKey])

	flags = NodeFlags(Snow(4), map[string]string{config.NetworkCompressionTypeKey: "zstd"})
	require.Equal("zstd", flags[config.NetworkCompressionTypeKey])
}

// TestConfigBoundsNodes: a network of no node or more than MaxNodes nodes
// is refused by name before anything starts (the binaries are not even
// looked for).
func TestConfigBoundsNodes(t *testing.T) {
	require := require.New(t)
	for _, n := range []int{-1, 0, MaxNodes + 1} {
		err := Config{Nodes: n}.verify()
		require.ErrorIs(err, ErrNodeCount, "%d nodes", n)
		require.Contains(err.Error(), "1 to 16")
	}
	for _, n := range []int{1, 2, DefaultNodes, MaxNodes} {
		err := Config{Nodes: n, PluginDir: t.TempDir()}.verify()
		require.ErrorIs(err, ErrMissingBinary, "%d nodes pass the bound and reach the binaries' check", n)
	}
}

// TestSingleNodeFlags: a lone node keeps sybil protection on (tmpnet would
// turn it off).
func TestSingleNodeFlags(t *testing.T) {
	require := require.New(t)
	flags := NodeFlags(Snow(1), nil)
	singleNode(flags)
	require.Equal("true", flags[config.SybilProtectionEnabledKey])
}
