//go:build e2e

// Package e2e runs S-Chain on a real local network: avalanchego nodes built
// by `make build`, started by package localnet, driven over JSON-RPC. Run with
// `make e2e` (part of `make test`).
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/localnet"
)

// network is shared by the tests of this package; the tests that stop or
// kill nodes run last (their file, stop_test.go, sorts last, and they
// restore the node).
var network *localnet.Network

func buildDir() string {
	if d := os.Getenv("SCHAIN_BUILD_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "build")
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	cfg := localnet.DefaultConfig(buildDir())
	cfg.RootDir = filepath.Join(buildDir(), "e2e")
	cfg.Progress = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A network left by an interrupted run is stopped first.
	_ = localnet.StopAll(ctx, cfg.RootDir, nil)
	n, err := localnet.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the network: %v\n", err)
		return 1
	}
	network = n
	if n.Token == "" {
		fmt.Fprintf(os.Stderr, "e2e: the network has no write token at %s\n", n.TokenPath())
		return 1
	}
	code := 1
	defer func() {
		if code != 0 {
			dumpLogs(n)
		}
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer stopCancel()
		if err := localnet.StopAll(stopCtx, cfg.RootDir, nil); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stopping the network: %v\n", err)
		}
	}()
	if err := waitReady(ctx, n); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	code = m.Run()
	return code
}

// waitReady asks every node for its membership until each answers: the
// first request makes the chain open its first membership.
func waitReady(ctx context.Context, n *localnet.Network) error {
	for _, nd := range n.Nodes {
		c, err := client.New(nd.URI, n.ChainID.String(), client.DefaultConfig())
		if err != nil {
			return err
		}
		if err := poll(ctx, func() error { _, err := c.GetMembership(ctx); return err }); err != nil {
			return fmt.Errorf("chain not ready on %s: %w", nd.NodeID, err)
		}
	}
	return nil
}

// poll retries f every 200 ms until it succeeds or ctx ends; it returns
// f's last error with the deadline.
func poll(ctx context.Context, f func() error) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// dumpLogs prints the tail of every node's S-Chain log; the full logs stay
// under build/e2e.
func dumpLogs(n *localnet.Network) {
	fmt.Fprintf(os.Stderr, "e2e failed: node logs are kept under %s\n", n.Dir)
	for _, nd := range n.Nodes {
		path := filepath.Join(n.Dir, nd.NodeID.String(), "logs", n.ChainID.String()+".log")
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(os.Stderr, "---- %s (last %d lines)\n%s\n", path, len(lines), strings.Join(lines, "\n"))
	}
}

// router writes with the network's token, as every S-Chain client must.
func router(t *testing.T) *client.Router {
	t.Helper()
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = network.Token
	r, err := client.NewRouter(network.ChainURIsBase(), network.ChainID.String(), cfg)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	return r
}

func nodeClient(t *testing.T, nd localnet.Node) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Token = network.Token
	c, err := client.New(nd.URI, network.ChainID.String(), cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}
