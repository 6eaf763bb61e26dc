// Command schain-dev is the development command line (build/schain-dev,
// make run): every command of the operator's schain (cmd/schain, whose
// commands live in operator/cli), with the local network and the local
// SeaweedFS cluster of the build directory as their defaults, plus what
// only development needs and what links the test harness (tests/framework)
// or the tools (tools/): network start|stop|status, demo, bench (and bench
// sizing), legacy serve (the legacy raft stand-in), shadow run against the
// embedded stand-in with progress and plots, and seaweedfs
// up|down|status|demo|bench|bench-stores.
//
// It is for the project's developers, never installed by an operator.
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
	cli.Develop(devHooks())
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
