// Command schain is the S-Chain command line: it writes and reads through the
// JSON-RPC API of one or several nodes (routing writes to each range's owner)
// and runs the legacy raft allocator used by the shadow comparison.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
