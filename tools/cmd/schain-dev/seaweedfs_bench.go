package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/seaweedfs/weedbench"
	vmconfig "github.com/s-chain/schain/vm/config"
)

func newWeedBenchCmd(g *cli.Globals, o *cli.WeedOptions) *cobra.Command {
	s := weedbench.DefaultSettings()
	var out string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure SeaweedFS assigns: stock, the S-Chain sequencer and leaderless masters side by side; then kill masters and a validator, and S3 PUTs through a master kill (stock, leaderless, raftless)",
		Long: `Start, under --out, a fresh S-Chain network and four SeaweedFS clusters of
<build-dir>/weed (3 masters, a volume server each): one with the stock
sequencer, one with the S-Chain sequencer, one of leaderless masters
(schain-leaderless: every master assigns), one of raftless masters
(schain-raftless: no raft at all); the stock, leaderless and raftless ones
with a filer and an S3 gateway. Then:

  1. steady assigns: --clients closed-loop clients, --rounds rounds of
     --round-duration per cluster, interleaved (A B, B A, ...): assigns/s and
     latency percentiles, and S-Chain/stock ratios against the targets
     (throughput >= 0.95x, p99 <= 1.2x; leaderless >= 1.5x);
  2. leader kill, each cluster: --uploaders clients upload and --assigners
     only assign; kill -9 of the leader after --kill-before; the stall, failed
     uploads, keys issued twice, every acknowledged upload read back, the
     longest wait (leaderless: target <= 1 s);
  3. validator kill, S-Chain cluster: kill -9 of the validator owning the
     most of the cluster's key ranges while clients upload: failures and
     stalls per volume, owner alive or not;
  4. object kill, stock, leaderless and raftless clusters: --writers S3
     clients PUT objects through the S3 gateway and its filer; kill -9 of the
     master the filer follows after --kill-before, --object-after more: the
     longest PUT after the kill (raftless: target <= 300 ms), objects/s,
     failures, every acknowledged object read back, and whether the masters
     run raft.

Writes report.json and tables.md to --out and prints the tables. Every
process started is stopped at the end, also on error or Ctrl-C.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWeedBench(cmd.Context(), g, o, s, out)
		},
	}
	f := cmd.Flags()
	f.IntVar(&s.Clients, "clients", s.Clients, "closed-loop assign clients of a steady round")
	f.IntVar(&s.Rounds, "rounds", s.Rounds, "steady rounds per cluster")
	f.DurationVar(&s.RoundDuration, "round-duration", s.RoundDuration, "length of one steady round")
	f.IntVar(&s.Uploaders, "uploaders", s.Uploaders, "uploading clients of the kill phases")
	f.IntVar(&s.Assigners, "assigners", s.Assigners, "assign-only clients of the leader kills")
	f.DurationVar(&s.KillBefore, "kill-before", s.KillBefore, "load before a kill")
	f.DurationVar(&s.MasterKillAfter, "leader-after", s.MasterKillAfter, "load after a leader kill")
	f.DurationVar(&s.ValidatorKillAfter, "validator-after", s.ValidatorKillAfter, "load after the validator kill")
	f.IntVar(&s.Volumes, "volumes", s.Volumes, "volumes of the S-Chain cluster before the validator kill")
	f.IntVar(&s.Writers, "writers", s.Writers, "S3 clients of the object kills")
	f.DurationVar(&s.ObjectKillAfter, "object-after", s.ObjectKillAfter, "writes after an object kill's master kill")
	f.IntVar(&s.MasterMilliCPUs, "master-millicpus", 0, "limit every master to this many thousandths of a CPU, as if each had a machine of its own (a cgroup each: root on Linux; 0: no limit)")
	f.StringVar(&out, "out", filepath.Join(cli.DefaultBuildDir(), "bench", "seaweedfs"), "directory for the network, the clusters, the report and the tables")
	return cmd
}

func runWeedBench(ctx context.Context, g *cli.Globals, o *cli.WeedOptions, s weedbench.Settings, out string) error {
	if s.Clients < 1 || s.Rounds < 1 || s.Uploaders < 1 || s.RoundDuration <= 0 || s.KillBefore <= 0 {
		return cli.UsageError{Err: fmt.Errorf("clients, rounds and uploaders must be positive, durations too")}
	}
	if s.MasterMilliCPUs < 0 {
		return cli.UsageError{Err: fmt.Errorf("--master-millicpus %d: thousandths of a CPU, 0 for no limit", s.MasterMilliCPUs)}
	}
	began := time.Now()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var stops benchStops
	defer stops.run(g)

	n, prefix, stopNetwork, err := startBenchNetwork(ctx, g, o, out)
	if stopNetwork != nil {
		stops.add(stopNetwork)
	}
	if err != nil {
		return err
	}
	start := func(name string, mode cluster.Mode, s3 bool) (*cluster.Cluster, error) {
		dir := filepath.Join(out, name)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		cfg := cluster.DefaultConfig(filepath.Join(o.BuildDir, "weed"), dir, mode)
		cfg.Progress, cfg.MasterMilliCPUs, cfg.S3 = g.ErrOut, s.MasterMilliCPUs, s3
		cfg.SChain = cluster.SChain{URIs: n.ChainURIsBase(), Chain: n.ChainID.String(), TokenFile: n.TokenPath(), Prefix: prefix}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		c, err := cluster.Start(sctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("starting the %s cluster: %w", name, err)
		}
		stops.add(c.Stop)
		return c, nil
	}
	stock, err := start("stock", cluster.ModeRaft, true)
	if err != nil {
		return err
	}
	sc, err := start("schain", cluster.ModeSChain, false)
	if err != nil {
		return err
	}
	leaderless, err := start("leaderless", cluster.ModeLeaderless, true)
	if err != nil {
		return err
	}
	raftless, err := start("raftless", cluster.ModeRaftless, true)
	if err != nil {
		return err
	}
	rep, err := weedbench.Run(ctx, weedbench.Env{Stock: stock, SChain: sc, Leaderless: leaderless, Raftless: raftless, Network: n, Prefix: prefix}, s, g.ErrOut)
	if err != nil {
		return err
	}
	var tables strings.Builder
	if err := weedbench.WriteTables(&tables, rep); err != nil {
		return err
	}
	return emitBenchReport(g, out, rep, rep.Machine, tables.String(), began)
}

// startBenchNetwork starts a fresh S-Chain network under out/network for a
// SeaweedFS bench and records fresh cutover floors for a range prefix of the
// run's own; stop (set once something runs) stops it.
func startBenchNetwork(ctx context.Context, g *cli.Globals, o *cli.WeedOptions, out string) (n *localnet.Network, prefix string, stop func(context.Context) error, err error) {
	ncfg := localnet.DefaultConfig(o.BuildDir)
	ncfg.RootDir, ncfg.Progress, ncfg.ProfileDir = filepath.Join(out, "network"), g.ErrOut, o.ProfileDir
	if o.PipelineIntervalMs > 0 {
		cc := vmconfig.DefaultChainConfig()
		cc.PipelineIntervalMs = o.PipelineIntervalMs
		ncfg.ChainConfig = &cc
	}
	if o.Validators > 0 {
		ncfg.Nodes = o.Validators
	}
	if o.Genesis != nil {
		ncfg.Genesis = o.Genesis
	}
	_ = localnet.StopAll(ctx, ncfg.RootDir, nil) // what an earlier run left
	if err := os.RemoveAll(ncfg.RootDir); err != nil {
		return nil, "", nil, err
	}
	n, err = localnet.Start(ctx, ncfg)
	if err != nil {
		return nil, "", nil, fmt.Errorf("starting the S-Chain network: %w", err)
	}
	stop = func(ctx context.Context) error { return localnet.StopAll(ctx, ncfg.RootDir, nil) }
	if err := waitChainReady(ctx, g, n, 3*time.Minute); err != nil {
		return nil, "", stop, err
	}
	prefix = fmt.Sprintf("bench-%d", time.Now().Unix())
	if err := freshCutover(ctx, g, n, prefix); err != nil {
		return nil, "", stop, err
	}
	return n, prefix, stop, nil
}

// benchGenesis is the local network's genesis with another
// groupCommitReturnMs, checked as a node would check it.
func benchGenesis(groupReturnMs uint64) ([]byte, error) {
	var g map[string]any
	if err := json.Unmarshal(localnet.Genesis(0, 0, 0), &g); err != nil {
		return nil, err
	}
	g["groupCommitReturnMs"] = groupReturnMs
	b, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	if _, err := vmconfig.ParseGenesis(b); err != nil {
		return nil, cli.UsageError{Err: err}
	}
	return b, nil
}

// emitBenchReport writes a SeaweedFS bench's report (JSON) and tables
// (Markdown, with the machine and the wall time) under out, and prints the
// tables and where they are.
func emitBenchReport(g *cli.Globals, out string, rep any, m benchmark.Machine, tables string, began time.Time) error {
	tables += fmt.Sprintf("\nMachine: %d CPUs (%s), %d MB RAM, %s %s/%s; bench wall time %s.\n",
		m.CPUs, m.CPUModel, m.MemoryMB, m.Go, m.GoOS, m.GoArch, time.Since(began).Round(time.Second))
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, benchReportFile), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, benchTablesFile), []byte(tables), 0o644); err != nil {
		return err
	}
	res := struct {
		Report  any      `json:"report"`
		Outputs []string `json:"outputs"`
	}{rep, cli.ShadowOutputs(out, benchReportFile, benchTablesFile)}
	return g.EmitText(res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%soutputs: %s/{%s,%s}\n", tables, out, benchReportFile, benchTablesFile)
		return err
	})
}

// benchStops are the stops of what a SeaweedFS bench started, run in the
// reverse order at its end, also on error or Ctrl-C.
type benchStops []func(context.Context) error

func (s *benchStops) add(stop func(context.Context) error) { *s = append(*s, stop) }

func (s *benchStops) run(g *cli.Globals) {
	ctx, cancel := context.WithTimeout(context.Background(), benchStopTimeout)
	defer cancel()
	for i := len(*s) - 1; i >= 0; i-- {
		if err := (*s)[i](ctx); err != nil {
			fmt.Fprintf(g.ErrOut, "bench: stopping: %v\n", err)
		}
	}
	fmt.Fprintln(g.ErrOut, "bench: every process stopped")
}
