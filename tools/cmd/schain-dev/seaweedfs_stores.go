package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/seaweedfs/storebench"
)

// filerGroupReturnMs is the genesis groupCommitReturnMs docs/using/seaweedfs.md
// gives a chain serving a filer store: a filer's next write reaches the
// owner later than the default's allocation clients do.
const filerGroupReturnMs = 160

func newWeedStoresBenchCmd(g *cli.Globals, o *cli.WeedOptions) *cobra.Command {
	s := storebench.DefaultSettings()
	var out string
	var groupReturnMs uint64
	cmd := &cobra.Command{
		Use:   "bench-stores",
		Short: "Measure S3 PUTs and GETs through the S-Chain filer store, stock leveldb2 and etcd on one cluster",
		Long: `Start, under --out, a fresh S-Chain network, a 3-member etcd cluster (the
etcd binary: scripts/install-etcd.sh installs Debian's etcd-server) and one
SeaweedFS cluster (a master in schain mode, a volume server) with filers on
three stores, each behind its own S3 gateway: the S-Chain store (two filers,
two gateways), stock leveldb2 (one filer) and etcd (two filers, two
gateways). Then:

  1. PUT rounds and GET rounds: --clients closed-loop clients on one gateway
     per store, --rounds rounds of --round-duration per store, interleaved:
     req/s and latency percentiles, and the S-Chain store's PUT throughput
     against the targets (>= 1.0x etcd, >= 0.5x leveldb2);
     What each store's own processes, the validators (and their nodes
     alone, without the plugins), the master and volume server and the
     whole machine used during the PUT rounds: cores and CPU per PUT, and
     the cores the S-Chain store would need at each target's rate, also
     with the plugins' CPU left out (a bound no change to the VM beats);
  2. conditional PUTs on the shared stores: --trials trials of four racing
     exclusive creates (If-None-Match: *) through both gateways; how often
     more than one commits.

Writes report.json and tables.md to --out and prints the tables. Every
process started is stopped at the end, also on error or Ctrl-C.`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if s.Clients < 1 || s.Rounds < 1 || s.RoundDuration <= 0 || s.ObjectSize < 1 || s.Trials < 0 {
				return cli.UsageError{Err: fmt.Errorf("clients, rounds, round duration and object size must be positive")}
			}
			if o.Validators < 0 || o.Validators > localnet.MaxNodes {
				return cli.UsageError{Err: fmt.Errorf("--validators %d: a local network has 1 to %d (0: the default %d)", o.Validators, localnet.MaxNodes, localnet.DefaultNodes)}
			}
			if groupReturnMs > 0 {
				var err error
				if o.Genesis, err = benchGenesis(groupReturnMs); err != nil {
					return err
				}
			}
			return runStoresBench(cmd.Context(), g, o, s, out)
		},
	}
	f := cmd.Flags()
	f.IntVar(&s.Clients, "clients", s.Clients, "closed-loop S3 clients of a round")
	f.IntVar(&s.Rounds, "rounds", s.Rounds, "rounds per store and operation")
	f.DurationVar(&s.RoundDuration, "round-duration", s.RoundDuration, "length of one round")
	f.IntVar(&s.ObjectSize, "object-size", s.ObjectSize, "bytes per object")
	f.IntVar(&s.Trials, "trials", s.Trials, "conditional-PUT trials per shared store")
	f.Uint64Var(&o.PipelineIntervalMs, "pipeline-interval-ms", 0, "the S-Chain network's block pacing (chain config pipelineIntervalMs; 0: its default)")
	f.IntVar(&o.Validators, "validators", 0, "the S-Chain network's validators (0: the local network's 4; 3 matches etcd's members)")
	f.Uint64Var(&groupReturnMs, "group-return-ms", filerGroupReturnMs, "the S-Chain genesis groupCommitReturnMs (0: the genesis default; docs/using/seaweedfs.md says why a filer store's chain takes 160)")
	f.StringVar(&o.ProfileDir, "profile-dir", "", "write CPU profiles of the S-Chain network's nodes and plugins there, every 10 s (see `schain-dev network start --profile-dir`)")
	f.StringVar(&out, "out", filepath.Join(cli.DefaultBuildDir(), "bench", "seaweedfs-stores"), "directory for the network, the cluster, the report and the tables")
	return cmd
}

func runStoresBench(ctx context.Context, g *cli.Globals, o *cli.WeedOptions, s storebench.Settings, out string) error {
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
	dir := filepath.Join(out, "cluster")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	cfg := cluster.DefaultConfig(filepath.Join(o.BuildDir, "weed"), dir, cluster.ModeSChain)
	cfg.Masters, cfg.Progress = 1, g.ErrOut
	cfg.SChain = cluster.SChain{URIs: n.ChainURIsBase(), Chain: n.ChainID.String(), TokenFile: n.TokenPath(), Prefix: prefix}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(sctx, cfg)
	if err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	stops.add(c.Stop)
	etcd, err := c.AddEtcd(sctx, 3)
	if err != nil {
		return err
	}
	schainToml := fmt.Sprintf("[schain]\nenabled = true\nrpc = %q\nchain = %q\ntoken_file = %q\nkey_prefix = %q\n",
		strings.Join(n.ChainURIsBase(), ","), n.ChainID.String(), n.TokenPath(), prefix)
	etcdToml := fmt.Sprintf("[etcd]\nenabled = true\nservers = %q\nkey_prefix = \"seaweedfs.\"\ntimeout = \"3s\"\n", strings.Join(etcd, ","))
	var stores []storebench.Store
	var etcdNames []string // the members' names, as AddEtcd gives them
	for i := range etcd {
		etcdNames = append(etcdNames, fmt.Sprintf("etcd%d", i+1))
	}
	for _, st := range []struct {
		name, toml string
		filers     int
	}{{"schain", schainToml, 2}, {"leveldb2", "", 1}, {"etcd", etcdToml, 2}} {
		var filers, names []string
		if st.name == "etcd" {
			names = append(names, etcdNames...)
		}
		for i := range st.filers {
			name := fmt.Sprintf("%s-filer%d", st.name, i+1)
			f, err := c.AddFiler(sctx, name, st.name, st.toml)
			if err != nil {
				return err
			}
			filers, names = append(filers, f), append(names, name)
		}
		store := storebench.Store{Name: st.name, Bucket: "bench-" + st.name}
		for i := range filers {
			// Each gateway prefers its own filer and fails over to the other.
			name := fmt.Sprintf("%s-s3-%d", st.name, i+1)
			gw, err := c.AddS3(sctx, name, append(filers[i:], filers[:i]...)...)
			if err != nil {
				return err
			}
			store.Gateways, names = append(store.Gateways, gw), append(names, name)
		}
		pids, err := c.PIDs(names...)
		if err != nil {
			return err
		}
		store.CPU = benchmark.Processes(pids)
		stores = append(stores, store)
	}
	validators, err := benchmark.AttachSChain(n)
	if err != nil {
		return err
	}
	core, err := c.PIDs("master1", "volume")
	if err != nil {
		return err
	}
	shared := []storebench.Group{
		{Name: "validators", CPU: validators},
		{Name: "nodes", CPU: validators.NodesAlone(), PartOf: "validators"},
		{Name: "master and volume server", CPU: benchmark.Processes(core)},
		storebench.Machine(),
	}
	rep, err := storebench.Run(ctx, stores, shared, s, g.ErrOut)
	if err != nil {
		return err
	}
	var tables strings.Builder
	if err := storebench.WriteTables(&tables, rep); err != nil {
		return err
	}
	return emitBenchReport(g, out, rep, rep.Machine, tables.String(), began)
}
