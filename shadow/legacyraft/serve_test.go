package legacyraft_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/shadow/legacyraft"
	"github.com/s-chain/schain/shadow/legacyraft/legacyrafttest"
)

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestServeProcessMode runs a node as `schain legacy serve` would: TCP raft
// transport, boltdb in a temp dir, HTTP on loopback.
func TestServeProcessMode(t *testing.T) {
	require := require.New(t)
	cfg := legacyrafttest.FastConfig()
	cfg.Mode, cfg.Dir = legacyraft.ModeReplicated, t.TempDir()
	cfg.Bind, cfg.HTTPBind = freeAddr(t), freeAddr(t)
	cfg.Peers = []legacyraft.Peer{{ID: cfg.ID, RaftAddr: cfg.Bind, HTTPAddr: cfg.HTTPBind}}

	ctx, cancel := context.WithCancel(testCtx(t))
	served := make(chan error, 1)
	go func() { served <- legacyraft.Serve(ctx, cfg, legacyraft.Options{}) }()

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
	cfg := legacyrafttest.FastConfig()
	cfg.Mode, cfg.Dir = legacyraft.ModeReplicated, t.TempDir()
	cfg.Bind, cfg.HTTPBind = freeAddr(t), freeAddr(t)
	cfg.Peers = []legacyraft.Peer{{ID: cfg.ID, RaftAddr: cfg.Bind, HTTPAddr: cfg.HTTPBind}}

	ctx, cancel := context.WithCancel(testCtx(t))
	served := make(chan error, 1)
	go func() { served <- legacyraft.Serve(ctx, cfg, legacyraft.Options{}) }()
	client := legacyraft.NewClient([]string{cfg.HTTPBind}, time.Second)
	require.NoError(client.WaitReady(ctx))

	conn, err := net.Dial("tcp", cfg.HTTPBind)
	require.NoError(err)
	defer conn.Close()
	cancel()
	require.NoError(<-served, "shutdown waits for requests, not for a connection that sent none")
}
