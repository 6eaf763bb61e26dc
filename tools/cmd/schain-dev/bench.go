package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
	vmconfig "github.com/s-chain/schain/vm/config"
)

// benchStopTimeout bounds stopping every system after a run, even when the
// run itself was interrupted.
const benchStopTimeout = 2 * time.Minute

// Files the bench writes into --out, besides the charts.
const (
	benchReportFile = "report.json"
	benchTablesFile = "tables.md"
)

// benchOptions are the bench command's flags.
type benchOptions struct {
	settings     benchmark.Settings
	buildDir     string
	out          string
	legacyModes  []string
	legacyBinary string
	legacyWarmUp time.Duration
	legacyAfter  time.Duration
	schain       bool
	schainAfter  time.Duration
	// schainModes are the S-Chain write paths measured on the one network:
	// "per-request" (a transaction per request, waited for) and "pooled"
	// (answered from the owner's committed reservation); schainFailover is
	// the one whose failover phase runs (one kill per network).
	schainModes    []string
	schainFailover string
	poolChunk      uint64
	schainNodes    int
	profileDir     string // CPU profiles of the S-Chain nodes and plugins (empty: none)
	// certificates: the main S-Chain network makes finality certificates
	// (off: an A/A run against schain-uncertified, the comparison's own
	// scatter).
	certificates bool
	// schainRounds are the liveness round lengths whose failover is
	// measured, one network each (the main network's own setting reuses its
	// failover phase); livenessWindow is the load before each kill, watched
	// for flaps, and livenessMargin how long each failover is measured beyond
	// the rule's bound.
	schainRounds   []time.Duration
	livenessWindow time.Duration
	livenessMargin time.Duration
	livenessAfter  time.Duration // 0: bound + livenessMargin
	// hosts runs every node on a host of its own (network namespaces),
	// every link delayed hostDelay each way.
	hosts     bool
	hostDelay time.Duration
}

// S-Chain write paths of the bench, and the target name of each.
const (
	modePerRequest = "per-request"
	modePooled     = "pooled"
	modeBatched    = "pooled-batched"
	// The same paths through each plugin's direct API (chain config
	// directAPI, on for local networks) instead of the node's.
	modePerRequestDirect = "per-request-direct"
	modePooledDirect     = "pooled-direct"
	modeBatchedDirect    = "pooled-batched-direct"
	// modeUncertified is per-request on a second network whose nodes make
	// no finality certificates: what certificates cost, side by side.
	modeUncertified = "uncertified"
)

var schainTargetName = map[string]string{
	modePerRequest: "schain", modePooled: "schain-pooled", modeBatched: "schain-batched",
	modePerRequestDirect: "schain-direct", modePooledDirect: "schain-pooled-direct", modeBatchedDirect: "schain-batched-direct",
	modeUncertified: "schain-uncertified",
}

var (
	errBenchMode  = errors.New("unknown S-Chain mode")
	errBenchNodes = errors.New("S-Chain validators out of bounds")
)

func (o benchOptions) verifyModes() error {
	if o.schainNodes < 2 || o.schainNodes > localnet.MaxNodes {
		return fmt.Errorf("%w: --schain-nodes %d (hint: 2 to %d, every one a node and a plugin process on this machine)", errBenchNodes, o.schainNodes, localnet.MaxNodes)
	}
	for _, m := range o.schainModes {
		if _, ok := schainTargetName[m]; !ok {
			return fmt.Errorf("%w %q in --schain-modes (hint: per-request, pooled, pooled-batched, each with -direct, uncertified)", errBenchMode, m)
		}
	}
	if o.schainFailover == modeUncertified {
		return fmt.Errorf("%w: --schain-failover %q: the failover runs on the main network (hint: per-request, pooled or pooled-batched)", errBenchMode, o.schainFailover)
	}
	if o.schainFailover != "" && !slices.Contains(o.schainModes, o.schainFailover) {
		return fmt.Errorf("%w: --schain-failover %q is not among --schain-modes %v", errBenchMode, o.schainFailover, o.schainModes)
	}
	return nil
}

// benchSystems starts what the bench measures.
type benchSystems struct {
	// start starts the systems of the steady rounds; the returned stop
	// stops every one of them (also when start fails half-way, it stops
	// what started).
	start func(ctx context.Context, o benchOptions, progress io.Writer) (targets []benchmark.Target, stop func(), err error)
	// startLiveness starts an S-Chain network with liveness rounds of round
	// and returns its target for the failover write path.
	startLiveness func(ctx context.Context, o benchOptions, round time.Duration, progress io.Writer) (benchmark.Target, func(), error)
}

func newBenchCmd(g *cli.Globals) *cobra.Command {
	return benchCmd(g, benchSystems{start: startBenchTargets, startLiveness: startLivenessTarget})
}

func benchCmd(g *cli.Globals, start benchSystems) *cobra.Command {
	o := benchOptions{settings: benchmark.DefaultSettings()}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure S-Chain against the legacy raft allocator side by side, then kill -9 a node of each",
		Long: `Start a 3-process legacy raft allocator per --legacy-modes and a 3-node
local S-Chain network (under <out>/network, not the network of make run),
warm them up, then drive the same closed-loop workload (--ranges ranges,
--clients clients, --count ids per request) against each for --rounds
rounds of --round-duration, interleaved (A B C D, D C B A, ...) so that
machine drift weighs every system equally.

S-Chain is measured on one network through each --schain-modes write path:
"per-request" (schain: one transaction per request, waited for until
accepted), "pooled" (schain-pooled: ids the owner had reserved and
committed in advance, answered at once) and "pooled-batched"
(schain-batched: the same pooled requests, which the client coalesces per
owner into allocateBatch exchanges, one in flight per node); each
with "-direct" (schain-direct, schain-pooled-direct, schain-batched-direct)
sends the same requests to each plugin's own listener (getNode's
directURI, chain config directAPI) instead of the node's API. Mode
"uncertified" (schain-uncertified) is per-request on a second network,
under <out>/uncertified, whose nodes make no finality certificates (chain
config certificates: false): schain against it is what certificates cost,
and with --certificates=false (both networks without them) how far that
comparison scatters when nothing differs.
For each S-Chain system the report gives accept -> final latency (the
nodes' certificate_latency_seconds) against the interval between blocks,
and the CPU its nodes and plugins spent per request and per accepted block
(read from /proc around each round; on a saturated machine, steadier than
req/s).

Then, per system, a failover phase: one client per range, and after
--failover-before a kill -9 of the node that serves the most ranges (the
legacy leader; the S-Chain validator owning the most ranges), measured for
--legacy-after or --schain-after (S-Chain: the --schain-failover mode
only, since a network takes one kill). A range "kept allocating" if its longest
gap between successful allocations after the kill stayed below
max(2 x the system's steady p99, --stall-floor). Every allocation of the
run is checked for ids issued twice.

Then the S-Chain failover per liveness round setting (--schain-rounds):
for each round length other than the main network's, a fresh network with
that round, --liveness-window of load (watched for flapping: alive
validators dropped from the members), and a kill -9 measured for the
rule's bound ((K+1) rounds + the heartbeat lead) plus --liveness-margin.

Prints Markdown tables (req/s, ids/s, p50/p95/p99, S-Chain/legacy ratios;
failover results) and writes report.json, tables.md and PNG charts to --out.
Every process started is stopped at the end, also on error or Ctrl-C.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.hosts {
				start = benchSystems{start: startHostsTargets, startLiveness: func(context.Context, benchOptions, time.Duration, io.Writer) (benchmark.Target, func(), error) {
					return benchmark.Target{}, nil, errHostsLiveness
				}}
			}
			return runBench(cmd.Context(), g, o, start)
		},
	}
	f := cmd.Flags()
	s := &o.settings
	f.IntVar(&s.Ranges, "ranges", s.Ranges, "range keys in the workload")
	f.IntVar(&s.Clients, "clients", s.Clients, "concurrent closed-loop clients in the steady rounds")
	f.Uint64Var(&s.Count, "count", s.Count, "ids per request")
	f.IntVar(&s.Rounds, "rounds", s.Rounds, "steady rounds per system")
	f.DurationVar(&s.RoundDuration, "round-duration", s.RoundDuration, "length of one steady round")
	f.DurationVar(&s.RequestTimeout, "request-timeout", s.RequestTimeout, "bound of one request")
	f.BoolVar(&s.Failover, "failover", s.Failover, "run the kill -9 phases after the steady rounds (and the --schain-rounds networks)")
	f.DurationVar(&s.FailoverBefore, "failover-before", s.FailoverBefore, "load before the kill")
	f.DurationVar(&s.StallFloor, "stall-floor", s.StallFloor, "smallest stall that counts as not allocating")
	f.DurationVar(&o.legacyAfter, "legacy-after", 20*time.Second, "legacy failover measurement after the kill")
	f.DurationVar(&o.schainAfter, "schain-after", 0, "S-Chain failover measurement after the kill (0: the liveness rule's bound plus --liveness-margin)")
	f.DurationSliceVar(&o.schainRounds, "schain-rounds", []time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second}, "liveness round lengths whose S-Chain failover is measured, a network each (empty or --failover=false: none)")
	f.DurationVar(&o.livenessWindow, "liveness-window", 20*time.Second, "load before the kill on each --schain-rounds network, watched for flapping")
	f.DurationVar(&o.livenessMargin, "liveness-margin", 25*time.Second, "S-Chain failover measurement beyond the liveness rule's bound")
	f.DurationVar(&o.livenessAfter, "liveness-after", 0, "S-Chain failover measurement on each --schain-rounds network (0: the rule's bound plus --liveness-margin)")
	f.StringSliceVar(&o.legacyModes, "legacy-modes", []string{string(legacyraft.ModeSeaweedFS), string(legacyraft.ModeReplicated), string(legacyraft.ModeSlots)}, "legacy modes to run (empty: none)")
	f.StringVar(&o.legacyBinary, "legacy-binary", "", "schain binary serving legacy nodes (default: this executable)")
	f.DurationVar(&o.legacyWarmUp, "legacy-warmup", legacyraft.DefaultConfig().WarmUp, "how long a new seaweedfs-mode leader refuses (the real master: about 15 s)")
	f.BoolVar(&o.schain, "schain", true, "run S-Chain (a fresh local network of --schain-nodes validators)")
	f.StringSliceVar(&o.schainModes, "schain-modes", []string{modePerRequest, modePooled, modeBatched, modeBatchedDirect, modeUncertified}, "S-Chain write paths to measure: per-request, pooled, pooled-batched through the nodes' API; per-request-direct, pooled-direct, pooled-batched-direct the same through each plugin's direct API; uncertified: per-request on a second network without finality certificates")
	f.Uint64Var(&o.poolChunk, "schain-pool-chunk", 0, "ids per reservation of an owner's id pool (0: the genesis default, 65,536)")
	f.BoolVar(&o.certificates, "certificates", true, "the main S-Chain network makes finality certificates; false with --schain-modes per-request,uncertified compares two networks without them (an A/A run: how far schain against schain-uncertified scatters when nothing differs)")
	f.IntVar(&o.schainNodes, "schain-nodes", localnet.DefaultNodes, "validators of each S-Chain network (2 to 16): with 4 or more, a certificate no longer needs the slowest one")
	f.StringVar(&o.schainFailover, "schain-failover", modePooled, "the S-Chain mode whose failover phase runs (a network takes one kill; empty: none)")
	f.StringVar(&o.profileDir, "profile-dir", "", "write CPU profiles of the S-Chain network's nodes and plugins there, every 10 s (see `schain-dev network start --profile-dir`)")
	f.BoolVar(&o.hosts, "hosts", false, "run every node (S-Chain validators, each legacy node) on a host of its own: a network namespace on a bridge (root; see docs/operating/deployment.md), S-Chain deployed with schain deploy's steps, the clients on this machine")
	f.DurationVar(&o.hostDelay, "host-delay", time.Millisecond, "with --hosts, the delay every host's link (and the clients') adds each way: twice it between two hosts")
	f.StringVar(&o.buildDir, "build-dir", cli.DefaultBuildDir(), "where avalanchego and the plugin are")
	f.StringVar(&o.out, "out", filepath.Join(cli.DefaultBuildDir(), "bench"), "directory for the network, legacy nodes, report, tables and charts")
	cmd.AddCommand(newBenchSizingCmd(g))
	return cmd
}

func runBench(ctx context.Context, g *cli.Globals, o benchOptions, start benchSystems) error {
	if err := o.settings.Verify(); err != nil {
		return cli.UsageError{Err: err}
	}
	for _, m := range o.legacyModes {
		switch legacyraft.Mode(m) {
		case legacyraft.ModeSeaweedFS, legacyraft.ModeReplicated, legacyraft.ModeSlots:
		default:
			return cli.UsageError{Err: fmt.Errorf("--legacy-modes: %q: want seaweedfs, replicated or slots", m)}
		}
	}
	if err := o.verifyModes(); err != nil {
		return cli.UsageError{Err: err}
	}
	for _, r := range o.schainRounds {
		if r < time.Second || r%time.Millisecond != 0 {
			return cli.UsageError{Err: fmt.Errorf("--schain-rounds: %s: a liveness round is whole milliseconds, at least 1s", r)}
		}
	}
	if o.schainAfter == 0 {
		o.schainAfter = localnet.FailoverBound(0, 0) + o.livenessMargin
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	began := time.Now()
	targets, stopAll, err := start.start(ctx, o, g.ErrOut)
	stop := sync.OnceFunc(stopAll)
	defer stop()
	if err != nil {
		return err
	}
	runner, err := benchmark.NewRunner(o.settings, targets, g.ErrOut)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	rep, err := runner.Run(ctx)
	if err != nil {
		return err
	}
	stop()
	// The per-round networks are failover measurements: --failover=false
	// skips them too.
	if o.schain && o.settings.Failover && o.schainFailover != "" && len(o.schainRounds) > 0 {
		if rep.Liveness, err = runLiveness(ctx, o, rep, start.startLiveness, g.ErrOut); err != nil {
			return err
		}
	}
	rep.Machine = benchmark.DescribeMachine()
	rep.WallTime = time.Since(began)
	var tables strings.Builder
	if err := benchmark.WriteTables(&tables, rep); err != nil {
		return err
	}
	fmt.Fprintf(&tables, "\nMachine: %d CPUs (%s), %d MB RAM, %s %s/%s; bench wall time %s (from starting the systems to stopping them).\n",
		rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.MemoryMB, rep.Machine.Go, rep.Machine.GoOS, rep.Machine.GoArch, rep.WallTime.Round(time.Second))
	if err := writeBenchOutputs(o.out, rep, tables.String()); err != nil {
		return err
	}
	res := benchResult{Report: rep, Outputs: cli.ShadowOutputs(o.out, benchReportFile, benchTablesFile, benchmark.ThroughputFile, benchmark.LatencyFile, benchmark.StallsFile)}
	return g.EmitText(res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%soutputs: %s/{%s,%s,%s,%s,%s}\n", tables.String(), o.out, benchReportFile, benchTablesFile, benchmark.ThroughputFile, benchmark.LatencyFile, benchmark.StallsFile)
		return err
	})
}

// benchResult is the bench's result for --json: report.json's content and
// the files written.
type benchResult struct {
	Report  *benchmark.Report `json:"report"`
	Outputs []string          `json:"outputs"`
}

func writeBenchOutputs(dir string, rep *benchmark.Report, tables string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, benchReportFile), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, benchTablesFile), []byte(tables), 0o644); err != nil {
		return err
	}
	_, err = benchmark.SaveCharts(dir, rep)
	return err
}

// runLiveness measures the S-Chain failover per liveness round setting: the
// main network's failover phase for its own round, a network of its own for
// every other.
func runLiveness(ctx context.Context, o benchOptions, main *benchmark.Report, start func(context.Context, benchOptions, time.Duration, io.Writer) (benchmark.Target, func(), error), progress io.Writer) ([]benchmark.RoundSetting, error) {
	var out []benchmark.RoundSetting
	for _, round := range o.schainRounds {
		rs := benchmark.RoundSetting{Round: round, K: localnet.LivenessRounds, Bound: localnet.FailoverBound(round, 0)}
		if round == localnet.RoundDuration {
			for _, sys := range main.Systems {
				if sys.SChain && sys.Failover != nil {
					rs.Network, rs.System = "main", sys
					out = append(out, rs)
				}
			}
			continue
		}
		fmt.Fprintf(progress, "liveness: an S-Chain network with %s rounds (K=%d, bound %s): %s of load, then a kill -9\n",
			round, rs.K, rs.Bound, o.livenessWindow)
		t, stop, err := start(ctx, o, round, progress)
		if err != nil {
			if stop != nil {
				stop()
			}
			return nil, fmt.Errorf("starting the network with %s rounds: %w", round, err)
		}
		t.FailoverAfter = rs.Bound + o.livenessMargin
		if o.livenessAfter > 0 {
			t.FailoverAfter = o.livenessAfter
		}
		s := o.settings
		s.Rounds, s.RoundDuration = 1, o.livenessWindow
		runner, err := benchmark.NewRunner(s, []benchmark.Target{t}, progress)
		if err != nil {
			stop()
			return nil, cli.UsageError{Err: err}
		}
		rep, err := runner.Run(ctx)
		stop()
		if err != nil {
			return nil, fmt.Errorf("the network with %s rounds: %w", round, err)
		}
		rs.Network, rs.System = fmt.Sprintf("own, %s rounds", round), rep.Systems[0]
		out = append(out, rs)
	}
	return out, nil
}

// startUncertified starts a second network under <out>/uncertified whose
// nodes make no finality certificates, as the per-request target
// schain-uncertified (compared with schain).
func startUncertified(ctx context.Context, o benchOptions, progress io.Writer) (benchmark.Target, func(context.Context) error, error) {
	nothing := func(context.Context) error { return nil }
	cfg := localnet.DefaultConfig(o.buildDir)
	cfg.RootDir, cfg.Progress, cfg.PoolChunk, cfg.Nodes = filepath.Join(o.out, "uncertified"), progress, o.poolChunk, o.schainNodes
	cc := vmconfig.DefaultChainConfig()
	cc.Certificates = false
	cfg.ChainConfig = &cc
	_ = localnet.StopAll(ctx, cfg.RootDir, nil)
	if err := os.RemoveAll(cfg.RootDir); err != nil {
		return benchmark.Target{}, nothing, err
	}
	fmt.Fprintln(progress, "starting a second S-Chain network without finality certificates (schain-uncertified)")
	sc, err := benchmark.StartSChain(ctx, cfg)
	if err != nil {
		return benchmark.Target{}, nothing, fmt.Errorf("starting the network without certificates: %w", err)
	}
	t, err := schainTarget(ctx, sc, modePerRequest, "schain-uncertified")
	if err != nil {
		return benchmark.Target{}, sc.Stop, err
	}
	t.Name, t.Finality, t.Baseline = schainTargetName[modeUncertified], nil, schainTargetName[modePerRequest]
	return t, sc.Stop, nil
}

// startLivenessTarget starts a fresh network with liveness rounds of round
// under <out>/liveness/<round>/ and returns it as the failover write path's
// target.
func startLivenessTarget(ctx context.Context, o benchOptions, round time.Duration, progress io.Writer) (benchmark.Target, func(), error) {
	cfg := localnet.DefaultConfig(o.buildDir)
	cfg.RootDir, cfg.Progress, cfg.Nodes = filepath.Join(o.out, "liveness", round.String()), progress, o.schainNodes
	cfg.PoolChunk, cfg.RoundDuration = o.poolChunk, round
	_ = localnet.StopAll(ctx, cfg.RootDir, nil)
	nothing := func() {}
	if err := os.RemoveAll(cfg.RootDir); err != nil {
		return benchmark.Target{}, nothing, err
	}
	sc, err := benchmark.StartSChain(ctx, cfg)
	if err != nil {
		return benchmark.Target{}, nothing, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), benchStopTimeout)
		defer cancel()
		if err := sc.Stop(sctx); err != nil {
			fmt.Fprintf(progress, "bench: stopping the network with %s rounds: %v\n", round, err)
		}
	}
	t, err := schainTarget(ctx, sc, o.schainFailover, fmt.Sprintf("schain-%s", round))
	if err != nil {
		stop()
		return benchmark.Target{}, nothing, err
	}
	return t, stop, nil
}

// schainTarget is the target of one write path of an S-Chain network, with
// its membership watched.
func schainTarget(ctx context.Context, sc *benchmark.SChainCluster, mode, network string) (benchmark.Target, error) {
	c := sc
	switch mode {
	case modePooled:
		c = sc.Pooled()
	case modeBatched:
		var err error
		if c, err = sc.PooledBatched(); err != nil {
			return benchmark.Target{}, err
		}
	case modePerRequestDirect, modePooledDirect, modeBatchedDirect:
		var err error
		if c, err = sc.Direct(ctx, mode != modePerRequestDirect, mode == modeBatchedDirect); err != nil {
			return benchmark.Target{}, err
		}
	}
	return benchmark.Target{Name: schainTargetName[mode], SChain: true, Network: network, Cluster: c, Membership: sc, NodeName: sc.NameOf, Finality: sc, CPU: sc}, nil
}

// startBenchTargets starts a fresh S-Chain network under <out>/network and
// one legacy cluster of processes per mode under <out>/legacy/<mode>.
func startBenchTargets(ctx context.Context, o benchOptions, progress io.Writer) ([]benchmark.Target, func(), error) {
	var (
		targets []benchmark.Target
		stops   []func(context.Context) error
	)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), benchStopTimeout)
		defer cancel()
		for i := len(stops) - 1; i >= 0; i-- {
			if err := stops[i](sctx); err != nil {
				fmt.Fprintf(progress, "bench: stopping: %v\n", err)
			}
		}
		fmt.Fprintln(progress, "bench: every system stopped")
	}
	var sc *benchmark.SChainCluster
	if o.schain {
		cfg := localnet.DefaultConfig(o.buildDir)
		cfg.RootDir, cfg.Progress = filepath.Join(o.out, "network"), progress
		cfg.PoolChunk, cfg.ProfileDir, cfg.Nodes = o.poolChunk, o.profileDir, o.schainNodes
		if !o.certificates {
			cc := vmconfig.DefaultChainConfig()
			cc.Certificates = false
			cfg.ChainConfig = &cc
		}
		// The bench owns its root: stop and forget what an earlier run left.
		_ = localnet.StopAll(ctx, cfg.RootDir, nil)
		if err := os.RemoveAll(cfg.RootDir); err != nil {
			return nil, stop, err
		}
		var err error
		if sc, err = benchmark.StartSChain(ctx, cfg); err != nil {
			return nil, stop, fmt.Errorf("starting the S-Chain network: %w", err)
		}
		stops = append(stops, sc.Stop)
		for _, nd := range sc.Nodes() {
			fmt.Fprintf(progress, "S-Chain %s is %s (%s)\n", sc.NodeName(nd.NodeID), nd.NodeID, nd.URI)
		}
	}
	bin := o.legacyBinary
	if bin == "" && len(o.legacyModes) > 0 {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, stop, err
		}
	}
	for _, m := range o.legacyModes {
		dir := filepath.Join(o.out, "legacy", m)
		if err := os.RemoveAll(dir); err != nil {
			return nil, stop, err
		}
		fmt.Fprintf(progress, "starting the legacy raft allocator in %s mode: 3 processes, logs under %s\n", m, dir)
		t, err := legacyTarget(ctx, o, m, bin, dir, nil)
		if err != nil {
			return nil, stop, err
		}
		stops = append(stops, t.Cluster.Stop)
		targets = append(targets, t)
	}
	if sc != nil {
		for _, m := range o.schainModes {
			if m == modeUncertified {
				t, stopIt, err := startUncertified(ctx, o, progress)
				stops = append(stops, stopIt)
				if err != nil {
					return nil, stop, err
				}
				targets = append(targets, t)
				continue
			}
			t, err := mainTarget(ctx, o, sc, m)
			if err != nil {
				return nil, stop, err
			}
			targets = append(targets, t)
		}
	}
	return targets, stop, nil
}

// legacyTarget starts the legacy allocator in mode m: 3 processes of bin
// under dir, on hosts (nil: on 127.0.0.1).
func legacyTarget(ctx context.Context, o benchOptions, m, bin, dir string, hosts []benchmark.LegacyHost) (benchmark.Target, error) {
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := benchmark.StartLegacy(sctx, benchmark.LegacyConfig{
		Binary: bin, Dir: dir, Mode: legacyraft.Mode(m), Nodes: 3, WarmUp: o.legacyWarmUp, Timeout: 5 * time.Second, Hosts: hosts,
	})
	if err != nil {
		return benchmark.Target{}, err
	}
	return benchmark.Target{
		Name: "legacy-" + m, SharedKeySpace: m == string(legacyraft.ModeSeaweedFS), FailoverAfter: o.legacyAfter, Cluster: c,
	}, nil
}

// mainTarget is the target of write path m on the main network: its
// failover phase if it is --schain-failover's, no finality reading without
// certificates.
func mainTarget(ctx context.Context, o benchOptions, sc *benchmark.SChainCluster, m string) (benchmark.Target, error) {
	t, err := schainTarget(ctx, sc, m, "schain")
	if err != nil {
		return t, err
	}
	if !o.certificates {
		t.Finality = nil
	}
	if m == o.schainFailover {
		t.FailoverAfter = o.schainAfter
	}
	return t, nil
}
