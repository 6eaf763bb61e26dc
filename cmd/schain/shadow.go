package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
	"github.com/s-chain/schain/operator/shadow/schainrpc"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
	"github.com/s-chain/schain/tools/shadow/plot"
)

// errGateClosed ends a shadow run whose cutover gate is not READY.
var errGateClosed = errors.New("cutover gate is not READY")

func newShadowCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "shadow", Short: "Compare S-Chain with the legacy allocator before cutover"}
	var (
		legacyAddr, legacyKind, legacyMode, prefix, out, buildDir string
		ranges, workers                                           int
		requests, count, gateRequests                             uint64
		duration, gateDuration, timeout                           time.Duration
	)
	run := &cobra.Command{
		Use:   "run",
		Short: "Send the same allocations to the legacy allocator and to S-Chain, compare, and decide cutover",
		Long: `Send the same allocations to the legacy allocator and to S-Chain, compare
every pair, and decide whether cutover is safe. Writes report.json,
summary.txt and PNG plots to --out. Exits 0 only when the gate is READY.

The legacy side is "embedded" (a 3-node raft allocator in this process,
--legacy-mode seaweedfs|replicated|slots), the HTTP addresses of
"schain legacy serve" nodes (--legacy-kind raft), or the masters of a real
SeaweedFS cluster (--legacy-kind seaweedfs). The S-Chain side is --rpc and
--chain, or the local network of --build-dir when --chain is not set.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if g.chain == "" {
				n, err := localnet.Open(ctx, filepath.Join(buildDir, "network"), nil)
				if err != nil {
					return usageError{fmt.Errorf("no --chain given and no local network: %w", err)}
				}
				g.chain, g.rpc = n.ChainID.String(), n.ChainURIsBase()
			}
			r, err := g.router()
			if err != nil {
				return err
			}
			leg, closeLegacy, err := openLegacy(ctx, legacyAddr, legacyKind, legacyMode, g.errOut)
			if err != nil {
				return err
			}
			defer closeLegacy()
			written, _ := leg.(legacy.WriteReporter)
			comp := shadow.DefaultConfig()
			comp.LegacySharedKeySpace = legacyMode == string(legacyraft.ModeSeaweedFS) || legacyKind == "seaweedfs"
			comp.Gate.MinRequests, comp.Gate.MinDuration = gateRequests, gateDuration
			cfg := shadow.RunConfig{
				Ranges: shadow.RangeKeys(prefix, ranges), Workers: workers, Requests: requests, Duration: duration,
				Count: count, Timeout: timeout, HeartbeatInterval: time.Second, Writes: shadow.WritePipelined,
			}
			runner, err := shadow.NewRunner(shadow.Sides{Legacy: leg, Written: written, SChain: schainrpc.New(r)}, cfg, comp)
			if err != nil {
				return usageError{err}
			}
			stop := showProgress(ctx, runner, requests, g.errOut)
			rep, err := runner.Run(ctx)
			stop()
			if err != nil {
				return err
			}
			if err := writeShadowOutputs(out, rep, runner.Floors(1000)); err != nil {
				return err
			}
			floors := runner.Floors(1000)
			outputs := shadowOutputs(out, "report.json", "summary.txt", "latency-cdf.png", "agreement-window.png")
			err = g.emitText(shadowResult{Report: rep, Floors: floors, Outputs: outputs}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%soutputs:  %s/{report.json,summary.txt,latency-cdf.png,agreement-window.png}\n", shadowSummary(rep, floors), out)
				return err
			})
			if err == nil && !rep.Decision.Ready {
				return errGateClosed
			}
			return err
		},
	}
	f := run.Flags()
	f.StringVar(&legacyAddr, "legacy", "embedded", `"embedded" or comma-separated HTTP addresses of the legacy nodes`)
	f.StringVar(&legacyKind, "legacy-kind", "raft", `with addresses: "raft" (schain legacy serve) or "seaweedfs" (real masters)`)
	f.StringVar(&legacyMode, "legacy-mode", string(legacyraft.ModeSeaweedFS), "embedded legacy mode: seaweedfs, replicated or slots")
	f.StringVar(&prefix, "range-prefix", "shadow", "range names are <prefix>-<n>")
	f.IntVar(&ranges, "ranges", 16, "number of ranges")
	f.IntVar(&workers, "concurrency", 8, "concurrent workers")
	f.Uint64Var(&requests, "requests", 1000, "stop after this many requests (0: only --duration)")
	f.DurationVar(&duration, "duration", 0, "stop after this long (0: only --requests)")
	f.Uint64Var(&count, "count", 1, "ids per request")
	f.DurationVar(&timeout, "request-timeout", 20*time.Second, "bound of each side of each request")
	f.Uint64Var(&gateRequests, "gate-requests", 500, "clean requests the cutover window needs")
	f.DurationVar(&gateDuration, "gate-duration", 5*time.Second, "clean time the cutover window needs")
	f.StringVar(&out, "out", filepath.Join(defaultBuildDir(), "shadow"), "directory for the report, summary and plots")
	f.StringVar(&buildDir, "build-dir", defaultBuildDir(), "where the local network lives (used without --chain)")
	cmd.AddCommand(run)
	return cmd
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
			return nil, nil, usageError{err}
		}
		return c, func() { c.Close() }, nil
	default:
		return nil, nil, usageError{fmt.Errorf("--legacy-kind %q: want raft or seaweedfs", kind)}
	}
}

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

// shadowResult is a shadow comparison's result for --json: the report and
// floors report.json holds, and the files written.
type shadowResult struct {
	Report  shadow.Report `json:"report"`
	Floors  shadow.Floors `json:"floors"`
	Outputs []string      `json:"outputs"`
}

// shadowOutputs are the paths of files in dir.
func shadowOutputs(dir string, files ...string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(dir, f)
	}
	return out
}

func writeShadowOutputs(dir string, rep shadow.Report, floors shadow.Floors) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(struct {
		Report shadow.Report `json:"report"`
		Floors shadow.Floors `json:"floors"`
	}{rep, floors}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(shadowSummary(rep, floors)), 0o644); err != nil {
		return err
	}
	_, err = plot.SaveAll(dir, rep)
	return err
}

func shadowSummary(rep shadow.Report, floors shadow.Floors) string {
	var sb strings.Builder
	verdict := "NOT READY"
	if rep.Decision.Ready {
		verdict = "READY"
	}
	fmt.Fprintf(&sb, "cutover gate: %s\n", verdict)
	for _, r := range rep.Decision.Reasons {
		fmt.Fprintf(&sb, "  - %s\n", r)
	}
	fmt.Fprintf(&sb, "requests: %d, agreed: %d, clean window: %d requests over %s, resets: %d\n",
		rep.Requests, rep.Agreed, rep.Decision.WindowRequests, rep.Decision.WindowDurationNS.Round(time.Millisecond), rep.Decision.Resets)
	if rep.Run != nil && rep.Run.Abandoned > 0 {
		fmt.Fprintf(&sb, "abandoned at the end of the run (not compared): %d\n", rep.Run.Abandoned)
	}
	var kinds []string
	for k, n := range rep.Counts {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	if len(kinds) > 0 {
		fmt.Fprintf(&sb, "findings: %s\n", strings.Join(kinds, ", "))
	}
	for _, side := range []shadow.Side{shadow.SideLegacy, shadow.SideSChain} {
		l := rep.Latency[side]
		fmt.Fprintf(&sb, "latency %-7s n=%d p50=%s p99=%s max=%s\n", side, l.Count, l.P50NS, l.P99NS, l.MaxNS)
	}
	fmt.Fprintf(&sb, "cutover floor (global, margin %d): %d\n", floors.Margin, floors.Global)
	return sb.String()
}
