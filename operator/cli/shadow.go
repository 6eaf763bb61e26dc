package cli

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

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
	"github.com/s-chain/schain/operator/shadow/schainrpc"
	"github.com/s-chain/schain/operator/shadow/seaweed"
)

// legacyModeSeaweedFS is the embedded legacy allocator's default mode
// (tools/shadow/legacyraft.ModeSeaweedFS): one key space, as SeaweedFS's.
const legacyModeSeaweedFS = "seaweedfs"

// ErrGateClosed ends a shadow run whose cutover gate is not READY.
var ErrGateClosed = errors.New("cutover gate is not READY")

func newShadowCmd(g *Globals) *cobra.Command {
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
summary.txt and (with schain-dev) PNG plots to --out. Exits 0 only when
the gate is READY.

The legacy side is "embedded" (a 3-node raft allocator in this process,
--legacy-mode seaweedfs|replicated|slots), the HTTP addresses of
"schain-dev legacy serve" nodes (--legacy-kind raft), or the masters of a real
SeaweedFS cluster (--legacy-kind seaweedfs). The S-Chain side is --rpc and
--chain, or the local network of --build-dir when --chain is not set.`,
		Args: ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if g.Chain == "" {
				if dev.LocalChain == nil {
					return UsageError{fmt.Errorf("--chain is required (or set %s; the local network is schain-dev's)", ChainEnv)}
				}
				chain, rpc, err := dev.LocalChain(ctx, buildDir)
				if err != nil {
					return UsageError{fmt.Errorf("no --chain given and no local network: %w", err)}
				}
				g.Chain, g.RPC = chain, rpc
			}
			r, err := g.Router()
			if err != nil {
				return err
			}
			leg, closeLegacy, err := openLegacy(ctx, legacyAddr, legacyKind, legacyMode, g.ErrOut)
			if err != nil {
				return err
			}
			defer closeLegacy()
			written, _ := leg.(legacy.WriteReporter)
			comp := shadow.DefaultConfig()
			comp.LegacySharedKeySpace = legacyMode == legacyModeSeaweedFS || legacyKind == "seaweedfs"
			comp.Gate.MinRequests, comp.Gate.MinDuration = gateRequests, gateDuration
			cfg := shadow.RunConfig{
				Ranges: shadow.RangeKeys(prefix, ranges), Workers: workers, Requests: requests, Duration: duration,
				Count: count, Timeout: timeout, HeartbeatInterval: time.Second, Writes: shadow.WritePipelined,
			}
			runner, err := shadow.NewRunner(shadow.Sides{Legacy: leg, Written: written, SChain: schainrpc.New(r)}, cfg, comp)
			if err != nil {
				return UsageError{err}
			}
			stop := func() {}
			if dev.ShowProgress != nil {
				stop = dev.ShowProgress(ctx, runner, requests, g.ErrOut)
			}
			rep, err := runner.Run(ctx)
			stop()
			if err != nil {
				return err
			}
			if err := WriteShadowOutputs(out, rep, runner.Floors(1000)); err != nil {
				return err
			}
			floors := runner.Floors(1000)
			files := append([]string{"report.json", "summary.txt"}, plotFiles()...)
			outputs := ShadowOutputs(out, files...)
			err = g.EmitText(ShadowResult{Report: rep, Floors: floors, Outputs: outputs}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%soutputs:  %s/{%s}\n", ShadowSummary(rep, floors), out, strings.Join(files, ","))
				return err
			})
			if err == nil && !rep.Decision.Ready {
				return ErrGateClosed
			}
			return err
		},
	}
	f := run.Flags()
	f.StringVar(&legacyAddr, "legacy", "embedded", `"embedded" or comma-separated HTTP addresses of the legacy nodes`)
	f.StringVar(&legacyKind, "legacy-kind", "raft", `with addresses: "raft" (schain-dev legacy serve) or "seaweedfs" (real masters)`)
	f.StringVar(&legacyMode, "legacy-mode", legacyModeSeaweedFS, "embedded legacy mode: seaweedfs, replicated or slots")
	f.StringVar(&prefix, "range-prefix", "shadow", "range names are <prefix>-<n>")
	f.IntVar(&ranges, "ranges", 16, "number of ranges")
	f.IntVar(&workers, "concurrency", 8, "concurrent workers")
	f.Uint64Var(&requests, "requests", 1000, "stop after this many requests (0: only --duration)")
	f.DurationVar(&duration, "duration", 0, "stop after this long (0: only --requests)")
	f.Uint64Var(&count, "count", 1, "ids per request")
	f.DurationVar(&timeout, "request-timeout", 20*time.Second, "bound of each side of each request")
	f.Uint64Var(&gateRequests, "gate-requests", 500, "clean requests the cutover window needs")
	f.DurationVar(&gateDuration, "gate-duration", 5*time.Second, "clean time the cutover window needs")
	f.StringVar(&out, "out", filepath.Join(DefaultBuildDir(), "shadow"), "directory for the report, summary and plots")
	f.StringVar(&buildDir, "build-dir", DefaultBuildDir(), "where the local network lives (used without --chain)")
	cmd.AddCommand(run)
	return cmd
}

func openLegacy(ctx context.Context, addr, kind, mode string, progress io.Writer) (legacy.Allocator, func(), error) {
	if addr == "embedded" || kind == "raft" {
		if dev.OpenLegacy == nil {
			return nil, nil, UsageError{errors.New(`--legacy embedded and --legacy-kind raft run the legacy raft stand-in: use schain-dev, or --legacy-kind seaweedfs with your masters`)}
		}
		return dev.OpenLegacy(ctx, addr, kind, mode, progress)
	}
	addrs := strings.Split(addr, ",")
	switch kind {
	case "seaweedfs":
		c, err := seaweed.New(seaweed.DefaultConfig(addrs...))
		if err != nil {
			return nil, nil, UsageError{err}
		}
		return c, func() { c.Close() }, nil
	default:
		return nil, nil, UsageError{fmt.Errorf("--legacy-kind %q: want raft or seaweedfs", kind)}
	}
}

// plotFiles are the plots dev.SavePlots writes next to a shadow report:
// none in the operator's schain.
func plotFiles() []string {
	if dev.SavePlots == nil {
		return nil
	}
	return []string{"latency-cdf.png", "agreement-window.png"}
}

// ShadowResult is a shadow comparison's result for --json: the report and
// floors report.json holds, and the files written.
type ShadowResult struct {
	Report  shadow.Report `json:"report"`
	Floors  shadow.Floors `json:"floors"`
	Outputs []string      `json:"outputs"`
}

// ShadowOutputs are the paths of files in dir.
func ShadowOutputs(dir string, files ...string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(dir, f)
	}
	return out
}

func WriteShadowOutputs(dir string, rep shadow.Report, floors shadow.Floors) error {
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
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(ShadowSummary(rep, floors)), 0o644); err != nil {
		return err
	}
	if dev.SavePlots == nil {
		return nil // the plots are schain-dev's (they link gonum)
	}
	return dev.SavePlots(dir, rep)
}

func ShadowSummary(rep shadow.Report, floors shadow.Floors) string {
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
