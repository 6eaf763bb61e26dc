// Command schain is the operator's S-Chain command line, the binary an
// operator installs: it writes and reads through the JSON-RPC API of one or
// several nodes (routing writes to each range's owner), deploys S-Chain onto
// a network, manages write tokens and the subnet's validators, verifies
// finality, and runs the shadow comparison and the cutover of a SeaweedFS
// cluster of your own. Its commands live in operator/cli.
//
// It links none of the test harness (tests/framework) or the tools (tools/):
// the local network (network, demo), the benchmarks (bench, sizing,
// seaweedfs bench), the legacy raft stand-in (legacy serve, shadow run
// --legacy embedded) and the local SeaweedFS cluster (seaweedfs up, down)
// are the development binary's, tools/cmd/schain-dev (build/schain-dev),
// which has every command of this one too. tests/layout keeps it so.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/s-chain/schain/operator/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
