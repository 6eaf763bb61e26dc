package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/tests/framework/apitest"
	"github.com/s-chain/schain/vm/config"
)

func TestTokenNew(t *testing.T) {
	require := require.New(t)
	code, out, errOut := run(t, "token", "new", "--name", "s3-master", "--ranges", "prod-eu1/keys/*, prod-eu1/volumes", "--methods", "allocate,allocateBatch")
	require.Equal(exitOK, code, errOut)
	tok := regexp.MustCompile(`(?m)^token:\s+(\S+)$`).FindStringSubmatch(out)
	require.Len(tok, 2, out)
	sum := regexp.MustCompile(`(?m)^sha256:\s+([0-9a-f]{64})$`).FindStringSubmatch(out)
	require.Len(sum, 2, out)
	require.Equal(config.TokenHash(tok[1]), sum[1])
	snippet := regexp.MustCompile(`(?m)^config:\s+(\{.*\})$`).FindStringSubmatch(out)
	require.Len(snippet, 2, out)
	cc, err := config.ParseChainConfig([]byte(`{"writeTokens":[` + snippet[1] + `]}`))
	require.NoError(err, "the printed entry is valid chain config")
	require.Equal([]config.WriteToken{{Name: "s3-master", SHA256: sum[1], Ranges: []string{"prod-eu1/keys/*", "prod-eu1/volumes"}, Methods: []string{"allocate", "allocateBatch"}}}, cc.WriteTokens)
	require.Contains(errOut, "chain config")

	// JSON output, and fresh tokens every time.
	code, out, errOut = run(t, "--json", "token", "new", "--name", "s3-master", "--ranges", "*")
	require.Equal(exitOK, code, errOut)
	var res struct {
		Token  string            `json:"token"`
		Config config.WriteToken `json:"config"`
	}
	require.NoError(json.Unmarshal([]byte(out), &res))
	require.NotEqual(tok[1], res.Token)
	require.Equal(config.TokenHash(res.Token), res.Config.SHA256)
	require.Equal([]string{"allocate", "allocateBatch", "putManifest"}, res.Config.Methods, "the write methods by default")

	// --out keeps the token off the terminal, private, and never overwrites.
	path := filepath.Join(t.TempDir(), "s3.token")
	code, out, errOut = run(t, "token", "new", "--name", "s3", "--ranges", "*", "--out", path)
	require.Equal(exitOK, code, errOut)
	b, err := os.ReadFile(path)
	require.NoError(err)
	saved := strings.TrimSpace(string(b))
	require.NotContains(out, saved)
	require.Contains(out, config.TokenHash(saved))
	info, err := os.Stat(path)
	require.NoError(err)
	require.Equal(os.FileMode(0o600), info.Mode().Perm())
	code, _, _ = run(t, "token", "new", "--name", "s3", "--ranges", "*", "--out", path)
	require.Equal(exitUsage, code, "an existing token file is not overwritten")

	code, _, errOut = run(t, "token", "new")
	require.Equal(exitUsage, code)
	require.Contains(errOut, `usage: required flag(s) "name", "ranges" not set (see schain token new --help)`)
	code, _, _ = run(t, "token", "new", "--name", "bad name", "--ranges", "*")
	require.Equal(exitUsage, code)
	code, _, errOut = run(t, "token", "new", "--name", "x", "--ranges", "a/b*")
	require.Equal(exitUsage, code)
	require.Contains(errOut, "whole segment")
}

// newAuthNode is a one-node API that accepts writes only with "good".
func newAuthNode(t *testing.T) *apitest.Net {
	f := apitest.New(t, 1)
	f.RequireToken("good")
	return f
}

func TestWriteTokenSources(t *testing.T) {
	require := require.New(t)
	t.Setenv(BuildDirEnv, t.TempDir()) // no local network
	t.Setenv(TokenEnv, "")
	n := newAuthNode(t)
	base := []string{"--rpc", n.Nodes[0].URI, "--chain", n.ChainID.String()}
	write := append(append([]string{}, base...), "allocate", "--range", "photos", "--count", "1")
	with := func(args ...string) []string { return append(append([]string{}, args...), write...) }

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(os.WriteFile(file, []byte("good\n"), 0o600))
	code, _, errOut := run(t, with("--token-file", file)...)
	require.Equal(exitOK, code, errOut)
	require.Equal("Bearer good", n.Nodes[0].LastAuth())
	require.Empty(errOut)

	require.NoError(os.Chmod(file, 0o644))
	code, _, errOut = run(t, with("--token-file", file)...)
	require.Equal(exitOK, code, errOut)
	require.Contains(errOut, "readable by others")

	code, _, errOut = run(t, with("--token", "good")...)
	require.Equal(exitOK, code, errOut)

	t.Setenv(TokenEnv, "good")
	code, _, errOut = run(t, write...)
	require.Equal(exitOK, code, errOut)
	require.Equal("Bearer good", n.Nodes[0].LastAuth())

	// Failures say what to do and never echo the token.
	code, _, errOut = run(t, with("--token", "wrong-secret")...)
	require.Equal(exitUnauthorized, code)
	require.Contains(errOut, "unauthorized")
	require.Contains(errOut, "revoked")
	require.NotContains(errOut, "wrong-secret")
	t.Setenv(TokenEnv, "")
	code, _, errOut = run(t, write...)
	require.Equal(exitUnauthorized, code)
	require.Contains(errOut, "--token-file")
	require.Equal("", n.Nodes[0].LastAuth())
	code, _, errOut = run(t, with("--token", "good", "--token-file", file)...)
	require.Equal(exitUsage, code)
	require.Contains(errOut, "[token token-file] were all set")
	// A token whose scope lacks the range: exit 10, naming it.
	n.Nodes[0].FailNext("allocate", apitest.RPCError(api.CodeForbidden, `token "gw" may not write range "photos"`,
		api.ForbiddenData{Reason: api.ScopeRange, Token: "gw", Range: "photos"}))
	code, _, errOut = run(t, with("--token", "good")...)
	require.Equal(exitForbidden, code, errOut)
	require.Contains(errOut, `token "gw" lacks range photos`)
	code, _, errOut = run(t, with("--token-file", filepath.Join(t.TempDir(), "missing"))...)
	require.Equal(exitUsage, code, errOut)
	code, _, errOut = run(t, with("--token", "has space")...)
	require.Equal(exitUsage, code, errOut)
	require.NotContains(errOut, "has space")
}
