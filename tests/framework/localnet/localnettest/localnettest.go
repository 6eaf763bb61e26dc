// Package localnettest runs a package's end-to-end tests on a local S-Chain
// network (package localnet): it starts the network before the tests,
// waits until every node answers, stops it after them however they end,
// and prints the tail of each node's chain log when a test failed (the
// logs stay under the network's directory).
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package localnettest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
)

var errNoToken = errors.New("the network has no write token")

// BuildDir is where `make build` put the node, the plugin and the CLI
// (SCHAIN_BUILD_DIR overrides it), seen from a package two directories
// below the repository's root; absolute, so that processes started in
// other directories find it too.
func BuildDir() string {
	d := os.Getenv("SCHAIN_BUILD_DIR")
	if d == "" {
		d = filepath.Join("..", "..", "build")
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

// Main starts a network in root (a directory of BuildDir's), hands it to
// set, runs m's tests and stops the network; it returns the exit code.
// Each of needs (files of BuildDir, build/weed say) must exist first.
func Main(m *testing.M, root string, set func(*localnet.Network), needs ...string) int {
	for _, f := range needs {
		if _, err := os.Stat(filepath.Join(BuildDir(), f)); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v: run `make %s` (make e2e does)\n", err, f)
			return 1
		}
	}
	cfg := localnet.DefaultConfig(BuildDir())
	cfg.RootDir = filepath.Join(BuildDir(), root)
	cfg.Progress = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = localnet.StopAll(ctx, cfg.RootDir, nil) // a network left by an interrupted run
	n, err := localnet.Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the S-Chain network: %v\n", err)
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
	if err := ready(ctx, n); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	set(n)
	code = m.Run()
	return code
}

// ready waits until the network has a write token and every node answers
// getMembership: the first request makes the chain open its first
// membership.
func ready(ctx context.Context, n *localnet.Network) error {
	if n.Token == "" {
		return fmt.Errorf("%w at %s", errNoToken, n.TokenPath())
	}
	for _, nd := range n.Nodes {
		c, err := client.New(nd.URI, n.ChainID.String(), client.DefaultConfig())
		if err != nil {
			return err
		}
		if err := Poll(ctx, func() error { _, err := c.GetMembership(ctx); return err }); err != nil {
			return fmt.Errorf("chain not ready on %s: %w", nd.NodeID, err)
		}
	}
	return nil
}

// Poll retries f every 200 ms until it succeeds or ctx ends; it returns
// f's last error with the deadline.
func Poll(ctx context.Context, f func() error) error {
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

// dumpLogs prints the tail of every node's S-Chain log.
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

// Router is a client.Router over n's nodes with its write token, as every
// S-Chain client writes.
func Router(t testing.TB, n *localnet.Network) *client.Router {
	t.Helper()
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = n.Token
	r, err := client.NewRouter(n.ChainURIsBase(), n.ChainID.String(), cfg)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	return r
}

// NodeClient is node nd's client with n's write token.
func NodeClient(t testing.TB, n *localnet.Network, nd localnet.Node) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Token = n.Token
	c, err := client.New(nd.URI, n.ChainID.String(), cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// Chain is what EachTx reads: a node's client or a router.
type Chain interface {
	GetBlock(ctx context.Context, height uint64) (*api.BlockReply, error)
	GetReceipt(ctx context.Context, txID api.ID) (*api.ReceiptReply, error)
}

// EachTx calls each with every transaction of the accepted blocks from
// height from to height to, in order, with its block and receipt: how an
// end-to-end test finds what the chain committed, not only what its own
// clients saw.
func EachTx(ctx context.Context, c Chain, from, to uint64, each func(blk *block.Block, tx *txs.Tx, rc *api.ReceiptReply)) error {
	for height := from; height <= to; height++ {
		b, err := c.GetBlock(ctx, height)
		if err != nil {
			return fmt.Errorf("block %d: %w", height, err)
		}
		raw, err := hex.DecodeString(strings.TrimPrefix(b.Bytes, "0x"))
		if err != nil {
			return fmt.Errorf("block %d: %w", height, err)
		}
		blk, err := block.Parse(raw, block.DefaultLimits(), txs.DefaultLimits())
		if err != nil {
			return fmt.Errorf("block %d: %w", height, err)
		}
		for _, tx := range blk.Txs {
			rc, err := c.GetReceipt(ctx, api.ID(tx.ID()))
			if err != nil {
				return fmt.Errorf("receipt of %s in block %d: %w", tx.ID(), height, err)
			}
			each(blk, tx, rc)
		}
	}
	return nil
}
