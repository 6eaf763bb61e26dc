//go:build e2e

// Package torture is S-Chain's torture run (issue 46): concurrent clients
// drive the filer store's key-value operations, counters and leases through
// the Go client on a real local 4-node network while a nemesis injects
// faults into the validators, one at a time; every client operation is
// recorded (package tests/history) and the whole history is checked at the
// end. Any anomaly fails the test, and the failing keys' history is written
// out as porcupine's visualisation under build/history/<run name>.
//
// Run with `make torture` (TORTURE_DURATION, default 10m; TORTURE_SEED,
// default time-based); a short run with a fixed seed is part of `make e2e`.
// docs/internals/testing.md says what it covers and what not yet.
package torture

import (
	"os"
	"testing"

	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
)

// network is the local network the run tortures.
var network *localnet.Network

func TestMain(m *testing.M) {
	os.Exit(localnettest.Main(m, "torture", func(n *localnet.Network) { network = n }))
}
