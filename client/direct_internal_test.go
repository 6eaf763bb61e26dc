package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// counted serves h and counts the requests it gets.
type counted struct {
	h http.Handler
	n atomic.Int64
}

func (c *counted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.h.ServeHTTP(w, r)
}

// TestDirectConfig: a client with Config.Direct learns its node's direct
// API from getNode and sends its calls there; when that refuses
// connections the same call goes through the node's API, and the client
// learns the next announced one after directRetry; a direct API that
// answers with a failure is not bypassed (the call may have been made).
func TestDirectConfig(t *testing.T) {
	require := require.New(t)
	defer func(d time.Duration) { directRetry = d }(directRetry)
	directRetry = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := apitest.New(t, 1)
	node := f.Nodes[0]
	first := &counted{h: node.Handler()}
	srv := httptest.NewServer(first)
	node.SetDirectURI(srv.URL)
	cfg := DefaultConfig()
	cfg.Direct = true
	c, err := New(node.URI, f.ChainID.String(), cfg)
	require.NoError(err)

	for range 3 {
		_, err := c.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
		require.NoError(err)
	}
	require.Equal(int64(3), first.n.Load(), "every call after the first getNode went to the direct API")
	require.Equal(1, node.Count("getNode"), "asked once")

	// The direct API goes away. A call on a connection it had open fails
	// as any transport failure does (it may have been made); the next goes
	// through the node, and one that could not connect at all goes there
	// at once.
	srv.Close()
	if _, err := c.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1}); err != nil {
		require.ErrorIs(err, ErrTransport)
	}
	made := node.Count("allocate")
	_, err = c.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err)
	require.Equal(made+1, node.Count("allocate"))
	fresh, err := New(node.URI, f.ChainID.String(), cfg)
	require.NoError(err)
	_, err = fresh.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err, "refused at the announced direct API, made through the node")

	// A new one is announced and learned after directRetry.
	second := &counted{h: node.Handler()}
	srv2 := httptest.NewServer(second)
	defer srv2.Close()
	node.SetDirectURI(srv2.URL)
	require.Eventually(func() bool {
		_, err := c.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
		return err == nil && second.n.Load() > 0
	}, 10*time.Second, 10*time.Millisecond)

	// An announcement on another host is not followed: the calls (and
	// the token) stay with the node.
	foreign, err := New(node.URI, f.ChainID.String(), cfg)
	require.NoError(err)
	node.SetDirectURI("http://attacker.example:9660")
	before := node.Count("allocate")
	_, err = foreign.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err)
	require.Equal(before+1, node.Count("allocate"))

	// A direct API that answers 503 is not bypassed: the error is the
	// caller's (a router retries as for any transport failure).
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	c2, err := New(node.URI, f.ChainID.String(), cfg)
	require.NoError(err)
	node.SetDirectURI(failing.URL)
	before = node.Count("allocate")
	_, err = c2.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.ErrorIs(err, ErrTransport)
	require.Contains(err.Error(), failing.URL, "the error names the direct API")
	require.Equal(before, node.Count("allocate"), "not made a second time through the node")
}
