//go:build e2e

// Package e2e runs S-Chain on a real local network: avalanchego nodes built
// by `make build`, started by package localnet, driven over JSON-RPC. Run with
// `make e2e` (part of `make test`).
package e2e

import (
	"context"
	"os"
	"testing"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
)

// network is shared by the tests of this package; the tests that stop or
// kill nodes run last (their file, stop_test.go, sorts last, and they
// restore the node).
var network *localnet.Network

func TestMain(m *testing.M) {
	os.Exit(localnettest.Main(m, "e2e", func(n *localnet.Network) { network = n }))
}

func buildDir() string { return localnettest.BuildDir() }

func poll(ctx context.Context, f func() error) error { return localnettest.Poll(ctx, f) }

// router writes with the network's token, as every S-Chain client must.
func router(t *testing.T) *client.Router { return localnettest.Router(t, network) }

func nodeClient(t *testing.T, nd localnet.Node) *client.Client {
	return localnettest.NodeClient(t, network, nd)
}
