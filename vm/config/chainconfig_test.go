package config_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/config"
)

func TestChainConfig(t *testing.T) {
	require := require.New(t)
	for _, empty := range []string{"", "  \n", "{}"} {
		c, err := config.ParseChainConfig([]byte(empty))
		require.NoError(err)
		require.Equal(config.DefaultChainConfig(), c)
		require.Empty(c.WriteTokens, "no token by default: writes disabled")
	}

	tok, wt := tokenFor(t, "s3-master")
	sum := sha256.Sum256([]byte(tok))
	require.Equal(hex.EncodeToString(sum[:]), wt.SHA256)
	b, err := json.Marshal(map[string]any{"writeTokens": []config.WriteToken{wt}, "maxRequestBytes": 65536, "maxPendingPerToken": 8, "maxWaitMs": 1000})
	require.NoError(err)
	c, err := config.ParseChainConfig(b)
	require.NoError(err)
	require.Equal(config.ChainConfig{WriteTokens: []config.WriteToken{wt}, MaxRequestBytes: 65536, MaxPendingPerToken: 8, MaxWaitMs: 1000, CertificateStallMs: 60_000, Certificates: true, CPUProfileEveryMs: 10_000, CPUProfileMaxFiles: 100, PipelineIntervalMs: config.DefaultPipelineIntervalMs}, c)
	require.False(c.CertificatesOff(), "certificates unless the config says otherwise")
	c, err = config.ParseChainConfig([]byte(`{"certificates": false}`))
	require.NoError(err)
	require.True(c.CertificatesOff())
	require.False((*config.ChainConfig)(nil).CertificatesOff())

	bad := func(name string, mutate func(*config.ChainConfig)) string {
		c := config.DefaultChainConfig()
		c.WriteTokens = []config.WriteToken{wt}
		mutate(&c)
		b, err := json.Marshal(c)
		require.NoError(err)
		_, err = config.ParseChainConfig(b)
		require.ErrorIs(err, config.ErrBadChainConfig, name)
		return err.Error()
	}
	require.Contains(bad("token pasted as hash", func(c *config.ChainConfig) { c.WriteTokens[0].SHA256 = tok }), "never put the token itself")
	require.Contains(bad("short hash", func(c *config.ChainConfig) { c.WriteTokens[0].SHA256 = "abcd" }), "64 hex digits")
	require.Contains(bad("empty name", func(c *config.ChainConfig) { c.WriteTokens[0].Name = "" }), "writeTokens[0].name")
	require.Contains(bad("bad name", func(c *config.ChainConfig) { c.WriteTokens[0].Name = "s3 master" }), "only A-Z a-z 0-9")
	require.Contains(bad("long name", func(c *config.ChainConfig) { c.WriteTokens[0].Name = strings.Repeat("n", 65) }), "1..64")
	require.Contains(bad("duplicate name", func(c *config.ChainConfig) {
		_, other := tokenFor(t, "s3-master")
		c.WriteTokens = append(c.WriteTokens, other)
	}), "used twice")
	require.Contains(bad("duplicate hash", func(c *config.ChainConfig) {
		c.WriteTokens = append(c.WriteTokens, config.WriteToken{Name: "copy", SHA256: strings.ToUpper(wt.SHA256)})
	}), "listed twice")
	require.Contains(bad("tiny body", func(c *config.ChainConfig) { c.MaxRequestBytes = 100 }), "maxRequestBytes 100 not in")
	require.Contains(bad("huge body", func(c *config.ChainConfig) { c.MaxRequestBytes = 1 << 40 }), "maxRequestBytes")
	require.Contains(bad("no pending", func(c *config.ChainConfig) { c.MaxPendingPerToken = 0 }), "maxPendingPerToken 0 not in")
	require.Contains(bad("no wait", func(c *config.ChainConfig) { c.MaxWaitMs = 0 }), "maxWaitMs 0 not in")
	require.Contains(bad("a stall bound below a second", func(c *config.ChainConfig) { c.CertificateStallMs = 10 }), "certificateStallMs 10 not in")
	require.Contains(bad("profiles shorter than a second", func(c *config.ChainConfig) { c.CPUProfileEveryMs = 10 }), "cpuProfileEveryMs 10 not in")
	require.Contains(bad("no profile kept", func(c *config.ChainConfig) { c.CPUProfileMaxFiles = 0 }), "cpuProfileMaxFiles 0 not in")
	require.Contains(bad("blocks paced seconds apart", func(c *config.ChainConfig) { c.PipelineIntervalMs = 5000 }), "pipelineIntervalMs 5000 not in")

	for in, want := range map[string]string{
		`{"writeToken": []}`:                             `unknown field "writeToken"`,
		`{"writeTokens": [{"name": "a", "hash": "00"}]}`: `unknown field "hash"`,
		`{"maxRequestBytes": "1MiB"}`:                    "maxRequestBytes",
		`{} {}`:                                          "data after the JSON object",
		`[`:                                              "unexpected EOF",
	} {
		_, err := config.ParseChainConfig([]byte(in))
		require.ErrorIs(err, config.ErrBadChainConfig, in)
		require.Contains(err.Error(), want, in)
	}
}

func TestGenerateToken(t *testing.T) {
	require := require.New(t)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		tok, err := config.GenerateToken()
		require.NoError(err)
		require.True(strings.HasPrefix(tok, "schain_"))
		require.Len(tok, len("schain_")+43, "256 bits, base64url")
		require.NotContains(tok, " ")
		require.False(seen[tok])
		seen[tok] = true
	}
	_, err := config.NewWriteToken("bad name", "x", nil, nil)
	require.Error(err)
	_, err = config.NewWriteToken("ok", "", nil, nil)
	require.Error(err)
}

func tokenFor(t *testing.T, name string) (string, config.WriteToken) {
	tok, err := config.GenerateToken()
	require.NoError(t, err)
	wt, err := config.NewWriteToken(name, tok, nil, nil)
	require.NoError(t, err)
	return tok, wt
}

// TestDirectAPIAddress: the direct API's address is also what getNode
// advertises, so it needs a port and a host clients can dial.
func TestDirectAPIAddress(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:0", "127.0.0.1:9660", "[::1]:9660", "node1.example:9660"} {
		c, err := config.ParseChainConfig([]byte(`{"directAPI": "` + ok + `"}`))
		require.NoError(t, err, ok)
		require.Equal(t, ok, c.DirectAPI)
	}
	for bad, want := range map[string]string{
		"0.0.0.0:9660":    "listens everywhere but cannot be advertised",
		"[::]:9660":       "listens everywhere but cannot be advertised",
		":9660":           "no host",
		"127.0.0.1":       "missing port",
		"127.0.0.1:99999": "not a number in [0, 65535]",
	} {
		_, err := config.ParseChainConfig([]byte(`{"directAPI": "` + bad + `"}`))
		require.ErrorIs(t, err, config.ErrBadChainConfig, bad)
		require.ErrorContains(t, err, want, bad)
	}
	c, err := config.ParseChainConfig(nil)
	require.NoError(t, err)
	require.Empty(t, c.DirectAPI, "off by default")
}
