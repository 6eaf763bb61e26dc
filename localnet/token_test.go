package localnet

import (
	"os"
	"path/filepath"
	"testing"

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
	require.Equal([]config.WriteToken{{Name: TokenName, SHA256: config.TokenHash(tok)}}, cc.WriteTokens)
	require.Equal(config.DefaultChainConfig().MaxRequestBytes, cc.MaxRequestBytes)

	// A given config and token are kept; the caller's slice is not touched.
	other := config.WriteToken{Name: "s3", SHA256: config.TokenHash("s3-secret")}
	given := config.DefaultChainConfig()
	given.WriteTokens = []config.WriteToken{other}
	given.MaxPendingPerToken = 7
	tok2, js, err := Config{ChainConfig: &given, Token: "schain_fixed"}.chainConfig()
	require.NoError(err)
	require.Equal("schain_fixed", tok2)
	cc, err = config.ParseChainConfig([]byte(js))
	require.NoError(err)
	require.Equal(7, cc.MaxPendingPerToken)
	require.Equal([]config.WriteToken{other, {Name: TokenName, SHA256: config.TokenHash("schain_fixed")}}, cc.WriteTokens)
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
