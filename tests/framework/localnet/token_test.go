package localnet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	avagoconfig "github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/config"
)

func TestChainConfigCarriesTheNetworkToken(t *testing.T) {
	require := require.New(t)
	tok, js, err := Config{}.chainConfig()
	require.NoError(err)
	require.NotContains(js, tok, "the nodes get the hash, not the token")
	cc, err := config.ParseChainConfig([]byte(js))
	require.NoError(err)
	require.Equal([]config.WriteToken{{Name: TokenName, SHA256: config.TokenHash(tok), Ranges: TokenRanges, Methods: []string{config.EveryMethod}}}, cc.WriteTokens)
	scope := cc.WriteTokens[0].Scope()
	for _, rk := range []string{"photos", "e2e-x/keys/3", "e2e-x/floor/keys", "e2e-x/volumes"} {
		require.True(scope.Covers(rk), "the network's token writes %s", rk)
	}
	require.Equal(config.DefaultChainConfig().MaxRequestBytes, cc.MaxRequestBytes)
	require.Equal(DirectAPI, cc.DirectAPI, "local nodes serve the API directly on loopback")

	// A given config and token are kept; the caller's slice is not touched.
	other := config.WriteToken{Name: "s3", SHA256: config.TokenHash("s3-secret")}
	given := config.DefaultChainConfig()
	given.WriteTokens = []config.WriteToken{other}
	given.MaxPendingPerToken = 7
	given.DirectAPI = "127.0.0.1:9660"
	tok2, js, err := Config{ChainConfig: &given, Token: "schain_fixed"}.chainConfig()
	require.NoError(err)
	require.Equal("schain_fixed", tok2)
	cc, err = config.ParseChainConfig([]byte(js))
	require.NoError(err)
	require.Equal(7, cc.MaxPendingPerToken)
	require.Equal("127.0.0.1:9660", cc.DirectAPI, "a given address is kept")
	require.Equal([]config.WriteToken{other, {Name: TokenName, SHA256: config.TokenHash("schain_fixed"), Ranges: TokenRanges, Methods: []string{config.EveryMethod}}}, cc.WriteTokens)
	require.Len(given.WriteTokens, 1)

	path := filepath.Join(t.TempDir(), TokenFile)
	require.NoError(os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(writeToken(path, tok))
	info, err := os.Stat(path)
	require.NoError(err)
	require.Equal(os.FileMode(0o600), info.Mode().Perm())
	got, err := ReadToken(path)
	require.NoError(err)
	require.Equal(tok, got)
}

// TestProfileDir: one setting profiles the nodes (their continuous
// profiler, a directory each) and the plugins (the chain config).
func TestProfileDir(t *testing.T) {
	require := require.New(t)
	dir := t.TempDir()
	c := Config{ProfileDir: dir, ProfileEvery: 5 * time.Second}
	_, js, err := c.chainConfig()
	require.NoError(err)
	cc, err := config.ParseChainConfig([]byte(js))
	require.NoError(err)
	require.Equal(dir, cc.CPUProfileDir)
	require.Equal(uint64(5000), cc.CPUProfileEveryMs)

	nodes := tmpnet.NewNodesOrPanic(2)
	require.NoError(c.profileNodes(nodes))
	for _, nd := range nodes {
		require.Equal(filepath.Join(dir, nd.NodeID.String()), nd.Flags[avagoconfig.ProfileDirKey])
		require.Equal("true", nd.Flags[avagoconfig.ProfileContinuousEnabledKey])
		require.Equal("5s", nd.Flags[avagoconfig.ProfileContinuousFreqKey])
	}

	// Off by default.
	_, js, err = Config{}.chainConfig()
	require.NoError(err)
	cc, err = config.ParseChainConfig([]byte(js))
	require.NoError(err)
	require.Empty(cc.CPUProfileDir)
	nodes = tmpnet.NewNodesOrPanic(1)
	require.NoError(Config{}.profileNodes(nodes))
	require.NotContains(nodes[0].Flags, avagoconfig.ProfileContinuousEnabledKey)
}
