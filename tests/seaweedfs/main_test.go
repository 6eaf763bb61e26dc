//go:build e2e

// Package e2e runs real SeaweedFS clusters (build/weed, the patched binary:
// 3 masters with hashicorp raft and a volume server) against a real local
// S-Chain network (build/avalanchego and the plugin), kills masters and
// validators with SIGKILL while clients upload, and checks what the issue
// asks: keys never issued twice, every acknowledged upload intact, uploads
// on volumes of live owners never failing, and a shadow → cutover path on
// live traffic. Run with `make e2e` (part of `make test`).
//
// Who it is for: the project's developers: end-to-end tests (make e2e and
// its parts), not shipped.
package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
)

// network is the S-Chain network every test of the package uses; the test
// that kills a validator runs last (tests run in source order).
var network *localnet.Network

func buildDir() string { return localnettest.BuildDir() }

// rootDir holds this package's network and clusters; a failed test's
// cluster directory (logs) is kept there.
func rootDir() string { return filepath.Join(buildDir(), "e2e-weed") }

func TestMain(m *testing.M) {
	os.Exit(localnettest.Main(m, filepath.Join("e2e-weed", "network"), func(n *localnet.Network) { network = n }, "weed"))
}

// router writes with the network's token.
func router(t *testing.T) *client.Router { return localnettest.Router(t, network) }
