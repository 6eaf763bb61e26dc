//go:build e2e

// Package e2e runs real SeaweedFS clusters (build/weed, the patched binary:
// 3 masters with hashicorp raft and a volume server) against a real local
// S-Chain network (build/avalanchego and the plugin), kills masters and
// validators with SIGKILL while clients upload, and checks what the issue
// asks: keys never issued twice, every acknowledged upload intact, uploads
// on volumes of live owners never failing, and a shadow → cutover path on
// live traffic. Run with `make e2e` (part of `make test`).
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

// network is the S-Chain network every test of the package uses; the test
// that kills a validator runs last (tests run in source order).
var network *localnet.Network

func buildDir() string {
	if d := os.Getenv("SCHAIN_BUILD_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "build")
}

// rootDir holds this package's network and clusters; a failed test's
// cluster directory (logs) is kept there.
func rootDir() string { return filepath.Join(buildDir(), "e2e-weed") }

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if _, err := os.Stat(filepath.Join(buildDir(), "weed")); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v: run `make weed` (make e2e does)\n", err)
		return 1
	}
	cfg := localnet.DefaultConfig(buildDir())
	cfg.RootDir = filepath.Join(rootDir(), "network")
	cfg.Progress = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = localnet.StopAll(ctx, cfg.RootDir, nil) // a network left by an interrupted run
	n, err := localnet.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the S-Chain network: %v\n", err)
		return 1
	}
	network = n
	defer func() {
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
	return m.Run()
}

// waitReady asks every node for its epoch until each answers (the first
// request opens the chain's first epoch).
func waitReady(ctx context.Context, n *localnet.Network) error {
	for _, nd := range n.Nodes {
		c, err := client.New(nd.URI, n.ChainID.String(), client.DefaultConfig())
		if err != nil {
			return err
		}
		for {
			_, err := c.GetMembership(ctx)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("chain not ready on %s: %w (last: %v)", nd.NodeID, ctx.Err(), err)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

// router writes with the network's token.
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

// prefix is a range prefix of its own for each test's cluster.
func prefix(t *testing.T) string {
	return "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + "-" + fmt.Sprint(time.Now().Unix()%100000)
}
