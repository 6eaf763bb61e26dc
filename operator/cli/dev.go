package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
)

// Dev is what the development binary (tools/cmd/schain-dev) adds to this
// command line: its commands, and the local network, the local SeaweedFS
// cluster, the legacy raft stand-in, progress bars and plots behind the
// operator commands' defaults. The operator's schain (cmd/schain) leaves it
// empty, so that it links none of the test harness (tests/framework) or the
// tools (tools/): a command that would need them says so and names the
// flags that replace them.
type Dev struct {
	// Name is the binary's name in the help ("schain" when empty).
	Name string
	// Commands are added to the root: network, demo, bench, legacy.
	Commands []func(*Globals) *cobra.Command
	// WeedCommands are added to "seaweedfs": up, down, status, demo,
	// bench, bench-stores.
	WeedCommands []func(*Globals, *WeedOptions) *cobra.Command

	// LocalToken is the local network's write token if chain is its chain
	// ("" otherwise): the token of last resort (see resolveToken).
	LocalToken func(chain string) string
	// LocalOwnerKey is the local network's owner key file if chain is its
	// chain ("" otherwise).
	LocalOwnerKey func(chain string) string
	// LocalChain is the chain ID and chain URIs of the local network under
	// buildDir: "shadow run" without --chain.
	LocalChain func(ctx context.Context, buildDir string) (chain string, rpc []string, err error)

	// OpenLegacy opens the legacy side of "shadow run" that the stand-in
	// serves: --legacy embedded, or --legacy-kind raft.
	OpenLegacy func(ctx context.Context, addr, kind, mode string, progress io.Writer) (legacy.Allocator, func(), error)
	// ShowProgress draws "shadow run"'s progress until the returned
	// function is called.
	ShowProgress func(ctx context.Context, runner *shadow.Runner, requests uint64, w io.Writer) func()
	// SavePlots writes a shadow report's plots (latency-cdf.png,
	// agreement-window.png) to dir.
	SavePlots func(dir string, rep shadow.Report) error

	// LocalPairsDirs are the local SeaweedFS cluster's pairs directories:
	// "seaweedfs shadow" without --pairs.
	LocalPairsDirs func(o *WeedOptions) ([]string, error)
	// LocalCutover and LocalRollback switch the local SeaweedFS cluster:
	// "seaweedfs cutover" without a cluster of your own, "seaweedfs
	// rollback" without --chain.
	LocalCutover  func(ctx context.Context, g *Globals, o *WeedOptions, margins cutover.Margins) error
	LocalRollback func(ctx context.Context, g *Globals, o *WeedOptions, band uint32, margins cutover.Margins) error
}

// dev is what Develop set: empty in the operator's schain.
var dev Dev

// Develop makes this command line the development binary's: call it once,
// before Execute.
func Develop(d Dev) { dev = d }
