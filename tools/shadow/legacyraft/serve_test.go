package legacyraft_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tools/shadow/legacyraft"
	"github.com/s-chain/schain/tools/shadow/legacyraft/legacyrafttest"
)

// serveOne serves a one-node cluster in the background as `schain legacy
// serve` would: TCP raft transport, boltdb in a temp dir, HTTP on
// loopback; cancel stops it and served gets Serve's result.
func serveOne(t *testing.T) (legacyraft.Config, context.Context, context.CancelFunc, <-chan error) {
	cfg := legacyrafttest.FastConfig()
	cfg.Mode, cfg.Dir = legacyraft.ModeReplicated, t.TempDir()
	p := legacyrafttest.Peer(t)
	cfg.Bind, cfg.HTTPBind = p.RaftAddr, p.HTTPAddr
	cfg.Peers = []legacyraft.Peer{{ID: cfg.ID, RaftAddr: cfg.Bind, HTTPAddr: cfg.HTTPBind}}
	ctx, cancel := context.WithCancel(testCtx(t))
	served := make(chan error, 1)
	go func() { served <- legacyraft.Serve(ctx, cfg, legacyraft.Options{}) }()
	return cfg, ctx, cancel, served
}

// TestServeProcessMode runs a node as `schain legacy serve` would: TCP raft
// transport, boltdb in a temp dir, HTTP on loopback.
func TestServeProcessMode(t *testing.T) {
	require := require.New(t)
	cfg, ctx, cancel, served := serveOne(t)

	client := legacyraft.NewClient([]string{cfg.HTTPBind}, time.Second)
	require.Eventually(func() bool {
		res, err := client.Allocate(ctx, "r", 5)
		return err == nil && res.First == 1
	}, legacyrafttest.WaitTimeout, 10*time.Millisecond)
	cancel()
	require.NoError(<-served)
}

// TestServeStopsDespiteAnIdleNewConnection: a client's spare keep-alive
// dial (a connection that never sends a request) must not hold shutdown.
// http.Server.Shutdown counts such a connection busy for its first 5 s,
// as long as the grace Serve allowed: on a loaded machine closing a
// cluster then failed with "context deadline exceeded" (the flaky shadow
// test of issue 15).
func TestServeStopsDespiteAnIdleNewConnection(t *testing.T) {
	require := require.New(t)
	cfg, ctx, cancel, served := serveOne(t)
	client := legacyraft.NewClient([]string{cfg.HTTPBind}, time.Second)
	require.NoError(client.WaitReady(ctx))

	conn, err := net.Dial("tcp", cfg.HTTPBind)
	require.NoError(err)
	defer conn.Close()
	cancel()
	require.NoError(<-served, "shutdown waits for requests, not for a connection that sent none")
}
