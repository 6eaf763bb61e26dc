package main

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
	"github.com/s-chain/schain/tools/shadow/legacyraft/legacyrafttest"
)

// TestLegacyServe runs `schain-dev legacy serve` in-process as a 1-node cluster,
// allocates through the legacy client, then stops it as SIGINT would.
func TestLegacyServe(t *testing.T) {
	require := require.New(t)
	p := legacyrafttest.Peer(t)
	bind, httpAddr := p.RaftAddr, p.HTTPAddr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Execute(ctx, []string{"legacy", "serve", "--id", "n1", "--dir", t.TempDir(),
			"--bind", bind, "--http", httpAddr, "--peers", "n1=" + bind + "=" + httpAddr,
			"--mode", "replicated", "--warmup", "0s"}, &stdout, &stderr)
	}()

	c := legacyraft.NewClient([]string{httpAddr}, time.Second)
	require.Eventually(func() bool {
		res, err := c.Allocate(ctx, "r", 5)
		return err == nil && res.First == 1 && res.Leader == "n1"
	}, 20*time.Second, 20*time.Millisecond)
	res, err := c.Allocate(ctx, "r", 2)
	require.NoError(err)
	require.Equal(uint64(6), res.First)

	cancel()
	select {
	case code := <-exited:
		require.Equal(exitOK, code, stderr.String())
	case <-time.After(15 * time.Second):
		require.FailNow("legacy serve did not stop")
	}
	require.Contains(stderr.String(), "legacy node n1 stopped")
	_, err = net.DialTimeout("tcp", httpAddr, time.Second)
	require.Error(err, "the HTTP listener is closed")
}

func TestLegacyServeRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"legacy", "serve", "--http", "0.0.0.0:9334"},
		{"legacy", "serve", "--mode", "paxos"},
		{"legacy", "serve", "--peers", "n1=127.0.0.1:1"},
		{"legacy", "serve", "--id", "n2", "--peers", "n1=127.0.0.1:1=127.0.0.1:2"},
	} {
		code, _, errOut := run(t, args...)
		require.Equal(t, exitUsage, code, errOut)
	}
}
