package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/config"
)

func TestTokenNew(t *testing.T) {
	require := require.New(t)
	code, out, errOut := run(t, "token", "new", "--name", "s3-master")
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
	require.Equal([]config.WriteToken{{Name: "s3-master", SHA256: sum[1]}}, cc.WriteTokens)
	require.Contains(errOut, "chain config")

	// JSON output, and fresh tokens every time.
	code, out, errOut = run(t, "--json", "token", "new", "--name", "s3-master")
	require.Equal(exitOK, code, errOut)
	var res struct {
		Token  string            `json:"token"`
		Config config.WriteToken `json:"config"`
	}
	require.NoError(json.Unmarshal([]byte(out), &res))
	require.NotEqual(tok[1], res.Token)
	require.Equal(config.TokenHash(res.Token), res.Config.SHA256)

	// --out keeps the token off the terminal, private, and never overwrites.
	path := filepath.Join(t.TempDir(), "s3.token")
	code, out, errOut = run(t, "token", "new", "--name", "s3", "--out", path)
	require.Equal(exitOK, code, errOut)
	b, err := os.ReadFile(path)
	require.NoError(err)
	saved := strings.TrimSpace(string(b))
	require.NotContains(out, saved)
	require.Contains(out, config.TokenHash(saved))
	info, err := os.Stat(path)
	require.NoError(err)
	require.Equal(os.FileMode(0o600), info.Mode().Perm())
	code, _, _ = run(t, "token", "new", "--name", "s3", "--out", path)
	require.Equal(exitUsage, code, "an existing token file is not overwritten")

	code, _, errOut = run(t, "token", "new")
	require.Equal(exitUsage, code)
	require.Contains(errOut, "--name is required")
	code, _, _ = run(t, "token", "new", "--name", "bad name")
	require.Equal(exitUsage, code)
}

// authNode is a one-node API that accepts writes only with "good".
type authNode struct {
	chainID ids.ID
	nodeID  ids.NodeID
	srv     *httptest.Server

	mu   sync.Mutex
	auth []string // guarded by mu; Authorization of each write
}

func newAuthNode(t *testing.T) *authNode {
	n := &authNode{chainID: ids.GenerateTestID(), nodeID: ids.GenerateTestNodeID()}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Method string `json:"method"`
			ID     uint64 `json:"id"`
		}
		_ = json.Unmarshal(b, &req)
		var result, rpcError any
		switch req.Method {
		case "schain.getNode":
			result = api.NodeReply{NodeID: n.nodeID, ChainID: n.chainID}
		case "schain.getOwner":
			result = api.OwnerReply{Range: "photos", Owner: n.nodeID, Epoch: 3}
		case "schain.allocate":
			n.mu.Lock()
			n.auth = append(n.auth, r.Header.Get("Authorization"))
			n.mu.Unlock()
			switch r.Header.Get("Authorization") {
			case "Bearer good":
				result = api.AllocateReply{TxID: ids.GenerateTestID(), Owner: n.nodeID, Epoch: 3}
			case "":
				rpcError = map[string]any{"code": api.CodeUnauthorized, "message": "needs a token", "data": api.UnauthorizedData{Reason: api.ReasonMissing}}
			default:
				rpcError = map[string]any{"code": api.CodeUnauthorized, "message": "bad token", "data": api.UnauthorizedData{Reason: api.ReasonInvalid}}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result, "error": rpcError})
	}))
	t.Cleanup(n.srv.Close)
	return n
}

func (n *authNode) lastAuth() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.auth[len(n.auth)-1]
}

func TestWriteTokenSources(t *testing.T) {
	require := require.New(t)
	t.Setenv(buildDirEnv, t.TempDir()) // no local network
	t.Setenv(tokenEnv, "")
	n := newAuthNode(t)
	base := []string{"--rpc", n.srv.URL, "--chain", n.chainID.String()}
	write := append(append([]string{}, base...), "allocate", "--range", "photos", "--count", "1")
	with := func(args ...string) []string { return append(append([]string{}, args...), write...) }

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(os.WriteFile(file, []byte("good\n"), 0o600))
	code, _, errOut := run(t, with("--token-file", file)...)
	require.Equal(exitOK, code, errOut)
	require.Equal("Bearer good", n.lastAuth())
	require.Empty(errOut)

	require.NoError(os.Chmod(file, 0o644))
	code, _, errOut = run(t, with("--token-file", file)...)
	require.Equal(exitOK, code, errOut)
	require.Contains(errOut, "readable by others")

	code, _, errOut = run(t, with("--token", "good")...)
	require.Equal(exitOK, code, errOut)

	t.Setenv(tokenEnv, "good")
	code, _, errOut = run(t, write...)
	require.Equal(exitOK, code, errOut)
	require.Equal("Bearer good", n.lastAuth())

	// Failures say what to do and never echo the token.
	code, _, errOut = run(t, with("--token", "wrong-secret")...)
	require.Equal(exitUnauthorized, code)
	require.Contains(errOut, "unauthorized")
	require.Contains(errOut, "revoked")
	require.NotContains(errOut, "wrong-secret")
	t.Setenv(tokenEnv, "")
	code, _, errOut = run(t, write...)
	require.Equal(exitUnauthorized, code)
	require.Contains(errOut, "--token-file")
	require.Equal("", n.lastAuth())
	code, _, errOut = run(t, with("--token", "good", "--token-file", file)...)
	require.Equal(exitUsage, code)
	require.Contains(errOut, "not both")
	code, _, errOut = run(t, with("--token-file", filepath.Join(t.TempDir(), "missing"))...)
	require.Equal(exitUsage, code, errOut)
	code, _, errOut = run(t, with("--token", "has space")...)
	require.Equal(exitUsage, code, errOut)
	require.NotContains(errOut, "has space")
}
