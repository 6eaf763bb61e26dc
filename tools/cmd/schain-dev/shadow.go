package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

// showProgress draws a progress bar from the runner's report until stopped.
func showProgress(ctx context.Context, runner *shadow.Runner, requests uint64, w io.Writer) func() {
	total := int64(requests)
	if total == 0 {
		total = -1 // unknown: a spinner
	}
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("shadow"),
		progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true), progressbar.OptionThrottle(200*time.Millisecond))
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			rep := runner.Report()
			_ = bar.Set64(int64(rep.Requests))
			bar.Describe(fmt.Sprintf("shadow: agreed %d, window %d, ready %v", rep.Agreed, rep.Decision.WindowRequests, rep.Decision.Ready))
			select {
			case <-done:
				_ = bar.Finish()
				fmt.Fprintln(w)
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
func openLegacy(ctx context.Context, addr, kind, mode string, progress io.Writer) (legacy.Allocator, func(), error) {
	if addr == "embedded" {
		dir, err := os.MkdirTemp("", "schain-legacy-")
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(progress, "starting an embedded 3-node legacy raft allocator (%s mode)...\n", mode)
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		c, err := legacyraft.StartLocalCluster(sctx, 3, legacyraft.Mode(mode), dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, err
		}
		return legacyraft.NewClient(c.Addrs(), 5*time.Second), func() { _ = c.Close(); _ = os.RemoveAll(dir) }, nil
	}
	addrs := strings.Split(addr, ",")
	switch kind {
	case "raft":
		return legacyraft.NewClient(addrs, 5*time.Second), func() {}, nil
	case "seaweedfs":
		c, err := seaweed.New(seaweed.DefaultConfig(addrs...))
		if err != nil {
			return nil, nil, cli.UsageError{Err: err}
		}
		return c, func() { c.Close() }, nil
	default:
		return nil, nil, cli.UsageError{Err: fmt.Errorf("--legacy-kind %q: want raft or seaweedfs", kind)}
	}
}
