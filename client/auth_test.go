package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// TestTokenSentAsBearerHeader: the token travels in the Authorization
// header of every request, never in the URL or the body.
func TestTokenSentAsBearerHeader(t *testing.T) {
	require := require.New(t)
	const tok = "schain_abcDEF-123_xyz"
	var (
		mu   sync.Mutex
		seen []*http.Request
		body []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, body = append(seen, r), append(body, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"txID":"11111111111111111111111111111111LpoYY"}}`)
	}))
	t.Cleanup(srv.Close)
	cfg := client.DefaultConfig()
	cfg.Token = tok
	c, err := client.New(srv.URL, api.ID(ids.GenerateTestID()).String(), cfg)
	require.NoError(err)
	_, err = c.Allocate(testCtx(t), api.AllocateArgs{Range: "r", Count: 1})
	require.NoError(err)
	_, _ = c.GetNode(testCtx(t))
	require.Len(seen, 2)
	for i, r := range seen {
		require.Equal("Bearer "+tok, r.Header.Get("Authorization"))
		require.NotContains(r.URL.String(), tok)
		require.NotContains(body[i], tok)
	}

	// No token: no header.
	c, err = client.New(srv.URL, api.ID(ids.GenerateTestID()).String(), client.DefaultConfig())
	require.NoError(err)
	_, _ = c.GetNode(testCtx(t))
	require.Empty(seen[2].Header.Get("Authorization"))
}

func TestTokenValidated(t *testing.T) {
	for _, bad := range []string{"with space", "new\nline", "tab\t", strings.Repeat("x", 2000), "é"} {
		cfg := client.DefaultConfig()
		cfg.Token = bad
		err := cfg.Verify()
		require.Error(t, err)
		if len(bad) < 100 {
			require.NotContains(t, err.Error(), bad, "errors never quote the token")
		}
	}
}

func TestAccessErrorCodes(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 1)
	r := newRouter(t, f)
	owner := f.Nodes[0]

	// Unauthorized and RequestTooLarge are final.
	owner.FailNext("allocate", apitest.RPCError(api.CodeUnauthorized, "no token", api.UnauthorizedData{Reason: api.ReasonMissing}))
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.ErrorIs(err, client.ErrUnauthorized)
	d, ok := client.IsUnauthorized(err)
	require.True(ok)
	require.Equal(api.ReasonMissing, d.Reason)
	e, _ := client.AsError(err)
	require.Equal("unauthorized", e.Name())
	require.Equal(1, owner.Count("allocate"), "not retried")

	owner.FailNext("allocate", apitest.RPCError(api.CodeRequestTooLarge, "big", api.LimitData{Limit: "maxRequestBytes", Max: 4096}))
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.ErrorIs(err, client.ErrRequestTooLarge)
	require.Equal(2, owner.Count("allocate"), "not retried")

	// TooManyRequests is retried after the node's hint.
	owner.FailNext("allocate", apitest.RPCError(api.CodeTooManyRequests, "slow down", api.RetryData{RetryAfterMs: 40}))
	began := time.Now()
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err)
	require.GreaterOrEqual(time.Since(began), 40*time.Millisecond, "RetryAfterMs honoured")
	require.Equal(4, owner.Count("allocate"))
	hint, ok := client.IsTooManyRequests(rpcErrAsClient(api.CodeTooManyRequests, `{"retryAfterMs":7}`))
	require.True(ok)
	require.Equal(uint64(7), hint.RetryAfterMs)
	require.Equal("too_many_requests", client.CodeName(api.CodeTooManyRequests))
	require.Equal("request_too_large", client.CodeName(api.CodeRequestTooLarge))
}

func rpcErrAsClient(code int, data string) error {
	return &api.Error{Code: code, Message: "m", Data: []byte(data)}
}
