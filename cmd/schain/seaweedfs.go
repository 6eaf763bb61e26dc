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
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/operator/pairs"
	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
)

// networkMarker, in a cluster directory, says that `seaweedfs up` started
// the local S-Chain network, so `seaweedfs down` stops it too.
const networkMarker = "started-network"

// weedOptions are the flags every seaweedfs subcommand shares.
type weedOptions struct {
	buildDir, dir, prefix string
	// profileDir: the benches' S-Chain networks write CPU profiles there.
	profileDir string
	// pipelineIntervalMs: the benches' S-Chain networks' block pacing (0:
	// the chain config's default).
	pipelineIntervalMs uint64
	// validators: the benches' S-Chain networks' size (0: the local
	// network's).
	validators int
	// genesis: the benches' S-Chain genesis (nil: the local network's).
	genesis []byte
}

func (o *weedOptions) clusterDir() string {
	if o.dir != "" {
		return o.dir
	}
	return filepath.Join(o.buildDir, "seaweedfs")
}

func newSeaweedFSCmd(g *globals) *cobra.Command {
	o := &weedOptions{}
	cmd := &cobra.Command{
		Use:   "seaweedfs",
		Short: "SeaweedFS on S-Chain: a local cluster, its shadow, cutover and rollback",
		Long: `SeaweedFS on S-Chain. build/weed (make weed) is SeaweedFS with the S-Chain
patch: master.toml [master.sequencer] type "schain-shadow" mirrors every
allocation to S-Chain, type "schain" takes file keys and volume ids from
S-Chain. These commands run a local cluster (3 masters with hashicorp raft
and a volume server on 127.0.0.1) and move a cluster between the modes:

  up        start the cluster (and the local S-Chain network if needed)
  demo      upload files, read them back, say where each id came from
  shadow    compare the shadow's recorded pairs: report, plots, cutover gate
  cutover   floors above every legacy id on S-Chain, masters to schain mode
  rollback  floors above every S-Chain id, masters back to stock (raft)
  status    processes, leader, mode, recorded floors
  down      stop the cluster (and the network up started)

On your own cluster, cutover and rollback take --masters or --volume-servers
and print the master.toml to install instead of restarting anything (see the
README, "SeaweedFS on S-Chain").`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.buildDir, "build-dir", defaultBuildDir(), "directory with weed, avalanchego, plugins/ and the local network")
	pf.StringVar(&o.dir, "dir", "", "the local cluster's directory (default <build-dir>/seaweedfs)")
	pf.StringVar(&o.prefix, "prefix", "seaweedfs", "the cluster's S-Chain range prefix ([master.sequencer] schain_prefix)")
	cmd.AddCommand(newWeedUpCmd(g, o), newWeedDownCmd(g, o), newWeedStatusCmd(g, o), newWeedDemoCmd(g, o),
		newWeedShadowCmd(g, o), newWeedCutoverCmd(g, o), newWeedRollbackCmd(g, o), newWeedBenchCmd(g, o), newWeedStoresBenchCmd(g, o))
	return cmd
}

func newWeedUpCmd(g *globals, o *weedOptions) *cobra.Command {
	var mode string
	var replace, filer, s3 bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local SeaweedFS cluster (3 masters, a volume server) in a sequencer mode",
		Long: `Start a local SeaweedFS cluster on 127.0.0.1: 3 masters (hashicorp raft) and a
volume server, from <build-dir>/weed. The processes keep running after the
command returns; "schain seaweedfs down" stops them.

--mode raft is stock SeaweedFS. schain-shadow and schain need S-Chain: the
local network of <build-dir>/network is used, or started when none runs.
A cluster started in schain mode has no legacy ids, so up records the
cutover floors of an empty cluster first. schain-leaderless masters all
assign; schain-raftless masters run no raft at all (docs/seaweedfs-masters.md).

--filer adds a filer on the masters, --s3 an S3 gateway on it (without
identities: any client, unsigned requests included).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			m, err := cluster.ParseMode(mode)
			if err != nil {
				return usageError{err}
			}
			dir := o.clusterDir()
			if old, err := cluster.Open(dir); err == nil {
				if !replace {
					return usageError{fmt.Errorf("a cluster is already in %s (mode %s): use it, `schain seaweedfs down`, or --replace", dir, old.Mode())}
				}
				fmt.Fprintf(g.errOut, "stopping the cluster in %s...\n", dir)
				if err := old.Stop(ctx); err != nil {
					return err
				}
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			cfg := cluster.DefaultConfig(filepath.Join(o.buildDir, "weed"), dir, m)
			cfg.Detach, cfg.Progress, cfg.Filer, cfg.S3 = true, g.errOut, filer, s3
			started := false
			defer func() {
				// A network this command started for a cluster that did not
				// start is stopped again.
				if started && err != nil {
					_ = localnet.StopAll(context.Background(), filepath.Join(o.buildDir, "network"), nil)
				}
			}()
			if m != cluster.ModeRaft {
				n, fresh, nerr := ensureNetwork(ctx, g, o.buildDir)
				started = fresh
				if nerr != nil {
					return nerr
				}
				cfg.SChain = cluster.SChain{URIs: n.ChainURIsBase(), Chain: n.ChainID.String(), TokenFile: n.TokenPath(), Prefix: o.prefix}
				if m == cluster.ModeSChain || m.Leaderless() {
					if err := freshCutover(ctx, g, n, o.prefix); err != nil {
						return err
					}
				}
			}
			c, err := cluster.Start(ctx, cfg)
			if err != nil {
				return err
			}
			if started {
				if err := os.WriteFile(filepath.Join(dir, networkMarker), []byte("schain seaweedfs up started the local network\n"), 0o644); err != nil {
					return err
				}
			}
			return printCluster(ctx, g, c)
		},
	}
	cmd.Flags().StringVar(&mode, "mode", string(cluster.ModeSChain), "master sequencer: raft (stock), schain-shadow, schain, schain-leaderless (every master assigns) or schain-raftless (no raft)")
	cmd.Flags().BoolVar(&replace, "replace", false, "stop a cluster already in the directory and start a new one")
	cmd.Flags().BoolVar(&filer, "filer", false, "start a filer on the masters")
	cmd.Flags().BoolVar(&s3, "s3", false, "start an S3 gateway on a filer (implies --filer)")
	return cmd
}

// ensureNetwork opens the local S-Chain network, starting one when none
// answers; fresh says whether it was started here.
func ensureNetwork(ctx context.Context, g *globals, buildDir string) (*localnet.Network, bool, error) {
	root := filepath.Join(buildDir, "network")
	if n, err := localnet.Open(ctx, root, nil); err == nil && chainAnswers(ctx, n) {
		fmt.Fprintf(g.errOut, "using the running S-Chain network %s\n", n.Dir)
		return n, false, nil
	}
	_ = localnet.StopAll(ctx, root, nil)
	cfg := localnet.DefaultConfig(buildDir)
	cfg.Progress = g.errOut
	n, err := localnet.Start(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	if err := waitChainReady(ctx, g, n, 3*time.Minute); err != nil {
		return nil, true, err
	}
	return n, true, nil
}

// networkRouter writes to the local network with its token.
func networkRouter(n *localnet.Network) (*client.Router, error) {
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = n.Token
	return client.NewRouter(n.ChainURIsBase(), n.ChainID.String(), cfg)
}

// freshCutover records the floors of a cluster without legacy ids, unless
// floors are recorded already.
func freshCutover(ctx context.Context, g *globals, n *localnet.Network, prefix string) error {
	r, err := networkRouter(n)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	f, err := cutover.Record(ctx, r.Fresh(), prefix, cutover.Plan(cutover.Bounds{}, cutover.Margins{}))
	if err != nil {
		return fmt.Errorf("recording the cutover floors of an empty cluster: %w", err)
	}
	fmt.Fprintf(g.errOut, "S-Chain floors for %s/: file keys >= %d, volume ids >= %d\n", prefix, f.FileKey, f.VolumeID)
	return nil
}

// clusterOut is the local cluster as up and status print it.
type clusterOut struct {
	Dir     string          `json:"dir"`
	Mode    cluster.Mode    `json:"mode"`
	Masters []string        `json:"masters"`
	Leader  string          `json:"leader"`
	Volume  string          `json:"volume"`
	SChain  cluster.SChain  `json:"schain"`
	Alive   map[string]bool `json:"alive"`
	// Floors: with status, the cutover floors recorded on S-Chain.
	Floors *cutover.Floors `json:"floors,omitempty"`
}

func printCluster(ctx context.Context, g *globals, c *cluster.Cluster) error {
	o, fs := clusterView(ctx, c)
	return g.emit(o, fs)
}

// clusterView is the cluster's result and its readable fields.
func clusterView(ctx context.Context, c *cluster.Cluster) (clusterOut, []field) {
	leader, lerr := c.Leader(ctx)
	switch {
	case c.Mode() == cluster.ModeRaftless:
		leader = "none: every master serves every client (no raft)"
	case lerr != nil:
		leader = "none (" + lerr.Error() + ")"
	}
	sc := c.SChainConfig()
	o := clusterOut{Dir: c.Dir(), Mode: c.Mode(), Masters: c.MasterAddrs(), Leader: leader, Volume: c.VolumeAddr(), SChain: sc, Alive: c.Alive()}
	var alive []string
	for name, up := range o.Alive {
		alive = append(alive, fmt.Sprintf("%s %s", name, map[bool]string{true: "up", false: "DOWN"}[up]))
	}
	sort.Strings(alive)
	fs := []field{
		{"cluster", c.Dir()}, {"mode", c.Mode()}, {"masters", strings.Join(o.Masters, ", ")}, {"leader", leader},
		{"volume server", o.Volume}, {"processes", strings.Join(alive, ", ")},
	}
	if c.Mode() != cluster.ModeRaft {
		fs = append(fs, field{"S-Chain", fmt.Sprintf("chain %s, ranges %s/..., %d nodes", sc.Chain, sc.Prefix, len(sc.URIs))})
	}
	fs = append(fs,
		field{"upload", fmt.Sprintf("curl -s 'http://%s/dir/assign' ; or: schain seaweedfs demo", o.Masters[0])})
	if f := c.FilerAddr(); f != "" {
		fs = append(fs, field{"filer", f})
	}
	if e := c.S3Endpoint(); e != "" {
		fs = append(fs, field{"S3", "http://" + e})
	}
	fs = append(fs,
		field{"logs", filepath.Join(c.Dir(), "master<N>/master.log, volume/volume.log")},
		field{"stop it", "schain seaweedfs down"})
	return o, fs
}

func newWeedDownCmd(g *globals, o *weedOptions) *cobra.Command {
	var keepNetwork bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local SeaweedFS cluster (and the S-Chain network up started)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := cluster.Open(o.clusterDir())
			if errors.Is(err, cluster.ErrNoCluster) {
				msg := "no SeaweedFS cluster in " + o.clusterDir()
				return g.emitLine(weedStopped{stopped: stopped{Reason: msg}, Dir: o.clusterDir()}, msg)
			}
			if err != nil {
				return err
			}
			if err := c.Stop(ctx); err != nil {
				return err
			}
			res := weedStopped{stopped: stopped{Stopped: true}, Dir: c.Dir()}
			text := fmt.Sprintf("SeaweedFS cluster stopped (data and logs stay in %s)", c.Dir())
			if _, err := os.Stat(filepath.Join(c.Dir(), networkMarker)); err == nil && !keepNetwork {
				if err := localnet.StopAll(ctx, filepath.Join(o.buildDir, "network"), nil); err != nil && !errors.Is(err, localnet.ErrNoNetwork) {
					return err
				}
				_ = os.Remove(filepath.Join(c.Dir(), networkMarker))
				res.NetworkStopped = true
				text += "\nthe S-Chain network up started is stopped"
			}
			return g.emitLine(res, text)
		},
	}
	cmd.Flags().BoolVar(&keepNetwork, "keep-network", false, "leave the S-Chain network running")
	return cmd
}

func newWeedStatusCmd(g *globals, o *weedOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the local cluster's processes, leader, mode and recorded S-Chain floors",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cluster.Open(o.clusterDir())
			if err != nil {
				return err
			}
			view, fs := clusterView(cmd.Context(), c)
			if c.Mode() == cluster.ModeRaft && c.SChainConfig().Chain == "" {
				return g.emit(view, fs)
			}
			r, err := clusterRouter(g, c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			f, err := cutover.Recorded(ctx, r.Fresh(), c.SChainConfig().Prefix)
			if err != nil {
				return fmt.Errorf("reading the recorded floors: %w", err)
			}
			view.Floors = &f
			return g.emitText(view, func(w io.Writer) error {
				if err := writeFields(w, fs); err != nil {
					return err
				}
				_, err := fmt.Fprintf(w, "S-Chain floors of %s/: file keys >= %d, volume ids >= %d (0: no cutover recorded)\n", c.SChainConfig().Prefix, f.FileKey, f.VolumeID)
				return err
			})
		},
	}
}

// clusterRouter writes to the S-Chain network the cluster uses.
func clusterRouter(g *globals, c *cluster.Cluster) (*client.Router, error) {
	sc := c.SChainConfig()
	if sc.Chain == "" {
		return nil, usageError{errors.New("the cluster has no S-Chain network configured")}
	}
	tok, err := localnet.ReadToken(sc.TokenFile)
	if err != nil {
		return nil, err
	}
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = tok
	return client.NewRouter(sc.URIs, sc.Chain, cfg)
}

func newWeedDemoCmd(g *globals, o *weedOptions) *cobra.Command {
	var (
		files int
		kill  bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Upload files through the masters, read them back, and say where each id came from",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cluster.Open(o.clusterDir())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if c.Mode() == cluster.ModeLeaderless && kill {
				return leaderlessDemo(ctx, g, c)
			}
			cfg := workload.DefaultConfig(c.MasterAddrs(), "demo")
			cfg.Workers, cfg.MaxUploads = 1, files
			r, err := workload.New(cfg)
			if err != nil {
				return err
			}
			defer r.Close()
			fmt.Fprintf(g.errOut, "uploading %d files through %s (%s mode)...\n", files, strings.Join(c.MasterAddrs(), ", "), c.Mode())
			res := r.Run(ctx)
			check := workload.Verify(ctx, res)
			var router *client.Router
			if c.Mode() != cluster.ModeRaft {
				if router, err = clusterRouter(g, c); err != nil {
					return err
				}
			}
			demo := weedDemo{Check: check}
			var text strings.Builder
			for _, u := range res.Uploads {
				src := idSource(ctx, c, router, u)
				fmt.Fprintf(&text, "%-22s volume %-4d key %-8d %s\n", u.Fid, u.Volume, u.Key, src)
				demo.Uploads = append(demo.Uploads, weedDemoUpload{Fid: u.Fid, Volume: u.Volume, Key: u.Key, Source: src})
			}
			fmt.Fprintf(&text, "read back: %d of %d intact (%d lost, %d altered); keys issued twice: %d\n",
				check.ReadBack, check.Uploads, check.Lost, check.Altered, check.IssuedTwice)
			if err := g.emitText(demo, func(w io.Writer) error { _, err := io.WriteString(w, text.String()); return err }); err != nil {
				return err
			}
			if check.Uploads < files {
				return fmt.Errorf("only %d of %d uploads were acknowledged", check.Uploads, files)
			}
			return check.Err()
		},
	}
	cmd.Flags().IntVar(&files, "files", 6, "files to upload")
	cmd.Flags().BoolVar(&kill, "kill", true, "schain-leaderless mode: kill -9 a master mid-upload, then restart it")
	return cmd
}

// leaderlessDemo uploads through every master of a leaderless cluster,
// kills -9 the raft leader mid-upload, shows the uploads going on through
// the others, restarts it and shows it serving again; then reads every
// upload back.
func leaderlessDemo(ctx context.Context, g *globals, c *cluster.Cluster) error {
	cfg := workload.DefaultConfig(c.MasterAddrs(), "demo")
	cfg.Workers, cfg.Spread, cfg.UploadTimeout = 4, true, 30*time.Second
	r, err := workload.New(cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	victim, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	i, err := c.MasterOf(victim)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.errOut, "uploading through %s (schain-leaderless: every master assigns; clients try the next master on error)...\n", strings.Join(c.MasterAddrs(), ", "))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan workload.Result, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	// show prints progress every half second for d, or until done says so.
	show := func(what string, d time.Duration, done func(per map[string]int) bool) {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		end := time.Now().Add(d)
		for time.Now().Before(end) && ctx.Err() == nil {
			<-t.C
			s := r.Snapshot()
			per := map[string]int{}
			for _, u := range s.Uploads {
				per[u.Master]++
			}
			if done(per) {
				return
			}
			var parts []string
			for _, m := range c.MasterAddrs() {
				parts = append(parts, fmt.Sprintf("%s %d", m, per[m]))
			}
			fmt.Fprintf(g.out, "%-26s %5d uploads (%s), %d failed attempts\n", what, len(s.Uploads), strings.Join(parts, ", "), len(s.Failures))
		}
	}
	never := func(map[string]int) bool { return false }
	show("uploading:", 2*time.Second, never)
	killedAt := time.Now()
	if err := c.KillMaster(ctx, i); err != nil {
		return err
	}
	fmt.Fprintf(g.out, "killed master%d %s (the raft leader) with SIGKILL\n", i+1, victim)
	show("master"+strconv.Itoa(i+1)+" dead:", 3*time.Second, never)
	before := r.Snapshot()
	if err := c.StartMaster(i); err != nil {
		return err
	}
	fmt.Fprintf(g.out, "restarted master%d\n", i+1)
	served := 0
	for _, u := range before.Uploads {
		if u.Master == victim {
			served++
		}
	}
	// Until the restarted master (weed takes a few seconds to start, then
	// schain_warmup) has served 50 more uploads.
	show("master"+strconv.Itoa(i+1)+" back:", 30*time.Second, func(per map[string]int) bool { return per[victim] >= served+50 })
	stop()
	res := <-done
	done <- res
	check := workload.Verify(ctx, res)
	var longestAfter time.Duration
	for _, u := range res.Uploads {
		if u.Done.After(killedAt) {
			longestAfter = max(longestAfter, u.Wait)
		}
	}
	fmt.Fprintf(g.out, "longest upload after the kill: %v (retries to the next master included); longest gap between acknowledgements: %v\n",
		longestAfter.Round(time.Millisecond), check.LongestGap.Round(time.Millisecond))
	fmt.Fprintf(g.out, "read back: %d of %d intact (%d lost, %d altered); keys issued twice: %d; failed uploads: %d\n",
		check.ReadBack, check.Uploads, check.Lost, check.Altered, check.IssuedTwice, check.Failed)
	if check.Failed > 0 {
		return fmt.Errorf("%d uploads failed", check.Failed)
	}
	return check.Err()
}

// idSource says where an upload's file key and volume id came from.
func idSource(ctx context.Context, c *cluster.Cluster, r *client.Router, u workload.Upload) string {
	switch c.Mode() {
	case cluster.ModeRaft:
		return fmt.Sprintf("stock sequencer of leader %s (in memory; volume id through raft)", u.Master)
	case cluster.ModeShadow:
		return fmt.Sprintf("stock sequencer of leader %s, mirrored to S-Chain range %s (schain seaweedfs shadow)",
			u.Master, schainseq.KeyRange(c.SChainConfig().Prefix, u.Volume, 1))
	}
	rng := schainseq.KeyRange(c.SChainConfig().Prefix, u.Volume, 1)
	owner, err := r.GetOwner(ctx, rng)
	if err != nil {
		return fmt.Sprintf("S-Chain range %s (owner unknown: %v)", rng, err)
	}
	next, err := r.GetAllocation(ctx, rng)
	if err != nil {
		return fmt.Sprintf("S-Chain range %s, owner %s", rng, owner.Owner)
	}
	return fmt.Sprintf("S-Chain range %s, owner %s: a committed reservation (range counter at %d); volume id from %s",
		rng, short(owner.Owner.String()), next.Next, schainseq.VolumeRange(c.SChainConfig().Prefix))
}

func newWeedShadowCmd(g *globals, o *weedOptions) *cobra.Command {
	var (
		pairDirs           []string
		out                string
		gateRequests       uint64
		gateDuration, wait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "shadow",
		Short: "Compare the pairs recorded by schain-shadow masters: report, plots, cutover gate",
		Long: `Read the pairs that masters of type schain-shadow record (each master's
<mdir>/schain-shadow/pairs.jsonl: every stock allocation and S-Chain's answer to
the same request), merge the masters' files by time, and run them through the
shadow comparator: agreement, S-Chain ids unique and monotonic per range,
legacy reissues across leaders, the cutover gate. Writes report.json,
summary.txt, latency-cdf.png and agreement-window.png to --out; exits 0 only
when the gate is READY (6 when not). --wait re-reads until READY or the wait
ends, for a shadow that is still collecting.

Mirrors dropped by a full queue are not compared; they are counted in the
summary. Without --pairs, the local cluster's masters are read.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dirs := pairDirs
			if len(dirs) == 0 {
				c, err := cluster.Open(o.clusterDir())
				if err != nil {
					return usageError{fmt.Errorf("no --pairs and no local cluster: %w", err)}
				}
				dirs = c.PairsDirs()
			}
			cfg := pairs.ComparatorConfig(shadow.DefaultConfig(), o.prefix)
			cfg.Gate.MinRequests, cfg.Gate.MinDuration = gateRequests, gateDuration
			deadline := time.Now().Add(wait)
			for {
				set, err := pairs.Load(dirs...)
				if err != nil && time.Now().After(deadline) {
					return err
				}
				if err == nil {
					comp, err := set.Compare(cfg)
					if err != nil {
						return usageError{err}
					}
					rep := comp.Report()
					if rep.Decision.Ready || time.Now().After(deadline) {
						return finishWeedShadow(g, out, set, comp, rep)
					}
					fmt.Fprintf(g.errOut, "shadow: %d pairs, clean window %d requests over %v, not ready yet...\n",
						rep.Requests, rep.Decision.WindowRequests, rep.Decision.WindowDurationNS.Round(time.Second))
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(2 * time.Second):
				}
			}
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&pairDirs, "pairs", nil, "pairs directories (each master's <mdir>/schain-shadow), comma-separated")
	f.StringVar(&out, "out", filepath.Join(defaultBuildDir(), "seaweedfs-shadow"), "directory for the report, summary and plots")
	f.Uint64Var(&gateRequests, "gate-requests", 1000, "clean pairs the cutover window needs")
	f.DurationVar(&gateDuration, "gate-duration", time.Minute, "clean time the cutover window needs")
	f.DurationVar(&wait, "wait", 0, "re-read the pairs until the gate is READY or this long has passed")
	return cmd
}

func finishWeedShadow(g *globals, out string, set *pairs.Set, comp *shadow.Comparator, rep shadow.Report) error {
	floors := comp.Floors(cutover.DefaultMargins().FileKey)
	if err := writeShadowOutputs(out, rep, floors); err != nil {
		return err
	}
	totals := set.Totals()
	key, vol := set.LegacyMax()
	extra := struct {
		Mirror       schainseq.ShadowState `json:"mirror"`
		LegacyMaxKey uint64                `json:"legacy_max_key"`
		LegacyMaxVol uint32                `json:"legacy_max_volume_id"`
		Files        []string              `json:"files"`
	}{totals, key, vol, set.Files}
	b, err := json.MarshalIndent(extra, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "seaweedfs.json"), b, 0o644); err != nil {
		return err
	}
	res := weedShadowResult{
		shadowResult: shadowResult{Report: rep, Floors: floors, Outputs: shadowOutputs(out, "report.json", "summary.txt", "seaweedfs.json", "latency-cdf.png", "agreement-window.png")},
		Mirror:       totals, LegacyMaxKey: key, LegacyMaxVol: vol,
	}
	err = g.emitText(res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%smirrors: %d offered, %d dropped (queue full), %d answered, %d failed or missing; legacy max key %d, max volume id %d\noutputs:  %s/{report.json,summary.txt,seaweedfs.json,latency-cdf.png,agreement-window.png}\n",
			shadowSummary(rep, floors), totals.Offered, totals.Dropped, totals.Mirrored, totals.Failed, key, vol, out)
		return err
	})
	if err == nil && !rep.Decision.Ready {
		return errGateClosed
	}
	return err
}

func newWeedCutoverCmd(g *globals, o *weedOptions) *cobra.Command {
	var (
		masters, volumeServers, pairDirs []string
		report                           string
		keyMargin, volumeMargin          uint64
		dryRun                           bool
	)
	cmd := &cobra.Command{
		Use:   "cutover",
		Short: "Record floors above every legacy id on S-Chain and move the masters to schain mode",
		Long: `Record on S-Chain the floors of a cutover: every S-Chain file key above every
file key the legacy (stock) sequencer issued, every S-Chain volume id above
every legacy volume id. The bounds come from the cluster's own state (each
volume server's highest key per volume, the masters' max volume id) and the
shadow's pairs (the highest key the stock sequencer handed out, written or
not), plus the margins. Floors only go up.

The local cluster (no --masters, --volume-servers): the masters are stopped,
the bounds read, the floors recorded, and the masters started in schain mode.

Your own cluster: stop the masters (so that nothing more is issued), run
this with --volume-servers (and --pairs, copied from the masters' -mdir, or
--report, the output of "schain seaweedfs shadow"), then install the printed
[master.sequencer] table and start the masters. With the
masters still running, --masters reads their state; keep the margin above
what they may issue until they stop.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			margins := cutover.Margins{FileKey: keyMargin, VolumeID: volumeMargin}
			if len(masters) == 0 && len(volumeServers) == 0 && report == "" && len(pairDirs) == 0 {
				c, err := cluster.Open(o.clusterDir())
				if err != nil {
					return usageError{fmt.Errorf("no --masters or --volume-servers and no local cluster: %w", err)}
				}
				if c.SChainConfig().Chain == "" {
					return usageError{errors.New("the local cluster runs without S-Chain: start it with `schain seaweedfs up --mode schain-shadow`")}
				}
				r, err := clusterRouter(g, c)
				if err != nil {
					return err
				}
				c.SetProgress(g.errOut)
				f, err := cutover.ToSChain(ctx, c, r.Fresh(), cutover.Options{Prefix: c.SChainConfig().Prefix, Margins: margins, Out: g.errOut})
				if err != nil {
					return err
				}
				return g.emitLine(weedSwitch{Floors: f, Mode: cluster.ModeSChain},
					fmt.Sprintf("cut over: file keys >= %d, volume ids >= %d come from S-Chain; masters in schain mode", f.FileKey, f.VolumeID))
			}
			var b cutover.Bounds
			if len(masters) > 0 {
				mb, err := cutover.FromCluster(ctx, masters)
				if err != nil {
					return err
				}
				b.Raise(mb)
			}
			if len(volumeServers) > 0 {
				vb, err := cutover.FromVolumeServers(ctx, volumeServers)
				if err != nil {
					return err
				}
				b.Raise(vb)
			}
			if report != "" {
				rb, err := cutover.FromShadowReport(report)
				if err != nil {
					return err
				}
				b.Raise(rb)
			}
			if len(pairDirs) > 0 {
				set, err := pairs.Load(pairDirs...)
				if err != nil {
					return err
				}
				key, vol := set.LegacyMax()
				b.Raise(cutover.Bounds{MaxFileKey: key, MaxVolumeID: uint64(vol), Sources: []string{fmt.Sprintf("pairs: max key %d, max volume id %d", key, vol)}})
			}
			f := cutover.Plan(b, margins)
			fmt.Fprintf(g.errOut, "legacy bounds: file key %d, volume id %d, from:\n  %s\n", b.MaxFileKey, b.MaxVolumeID, strings.Join(b.Sources, "\n  "))
			if dryRun {
				return g.emitLine(weedSwitch{Floors: f, Bounds: &b, DryRun: true},
					fmt.Sprintf("would record: file keys >= %d, volume ids >= %d (dry run)", f.FileKey, f.VolumeID))
			}
			r, err := g.router()
			if err != nil {
				return err
			}
			ctx, cancel := g.apiContext(cmd)
			defer cancel()
			got, err := cutover.Record(ctx, r.Fresh(), o.prefix, f)
			if err != nil {
				return err
			}
			toml := cluster.MasterToml(cluster.ModeSChain, cluster.SChain{URIs: g.rpc, Chain: g.chain, TokenFile: "<file holding the write token>", Prefix: o.prefix}, nil)
			return g.emitText(weedSwitch{Floors: got, Bounds: &b, Mode: cluster.ModeSChain, MasterToml: toml}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "recorded on S-Chain: file keys >= %d, volume ids >= %d\nnow give every master this master.toml and start them:\n\n%s",
					got.FileKey, got.VolumeID, toml)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&masters, "masters", nil, "your cluster's masters (host:port): read their state")
	f.StringSliceVar(&volumeServers, "volume-servers", nil, "your cluster's volume servers (host:port): read their keys (masters stopped)")
	f.StringSliceVar(&pairDirs, "pairs", nil, "pairs directories of the shadow (each master's <mdir>/schain-shadow)")
	f.StringVar(&report, "report", "", "output directory of `schain seaweedfs shadow` (its seaweedfs.json)")
	f.Uint64Var(&keyMargin, "margin", cutover.DefaultMargins().FileKey, "file keys left between the legacy bound and the S-Chain floor")
	f.Uint64Var(&volumeMargin, "volume-margin", cutover.DefaultMargins().VolumeID, "volume ids left between the legacy bound and the S-Chain floor")
	f.BoolVar(&dryRun, "dry-run", false, "print the floors, record nothing")
	return cmd
}

func newWeedRollbackCmd(g *globals, o *weedOptions) *cobra.Command {
	var (
		band                    uint32
		keyMargin, volumeMargin uint64
	)
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Move the masters back to the stock sequencer, above every id S-Chain gave the cluster",
		Long: `Roll back from S-Chain to the stock sequencer (raft) without reissuing an S-Chain
id: read every id S-Chain reserved for the cluster (each volume's key range
and the volume range, reservations not yet handed out included) and start
the stock sequencer above them, with [master.sequencer] file_key_floor and
volume_id_floor (the patched master raises its sequencer with SetMax and
starts new volume ids there).

The local cluster: its masters are stopped and started in raft mode with the
floors. Your own cluster (--rpc/--chain given): stop the masters, run this,
install the printed table, start them.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			margins := cutover.Margins{FileKey: keyMargin, VolumeID: volumeMargin}
			if g.chain == "" {
				c, err := cluster.Open(o.clusterDir())
				if err != nil {
					return usageError{fmt.Errorf("no --chain and no local cluster: %w", err)}
				}
				r, err := clusterRouter(g, c)
				if err != nil {
					return err
				}
				c.SetProgress(g.errOut)
				f, err := cutover.ToStock(ctx, c, r.Fresh(), cutover.Options{Prefix: c.SChainConfig().Prefix, Band: band, Margins: margins, Out: g.errOut})
				if err != nil {
					return err
				}
				return g.emitLine(weedSwitch{Floors: f, Mode: cluster.ModeRaft},
					fmt.Sprintf("rolled back: stock sequencer from file key %d, new volume ids from %d", f.FileKey, f.VolumeID))
			}
			r, err := g.router()
			if err != nil {
				return err
			}
			b, err := cutover.SChainBounds(ctx, r.Fresh(), o.prefix, band, func(done, total int) {
				fmt.Fprintf(g.errOut, "  read %d of %d key ranges\n", done, total)
			})
			if err != nil {
				return err
			}
			f := cutover.Plan(b, margins)
			toml := cluster.MasterToml(cluster.ModeRaft, cluster.SChain{}, cutover.RollbackSequencer(f))
			return g.emitText(weedSwitch{Floors: f, Bounds: &b, Mode: cluster.ModeRaft, MasterToml: toml}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "S-Chain bounds: file key %d, volume id %d\ngive every master this master.toml and start them:\n\n%s",
					b.MaxFileKey, b.MaxVolumeID, toml)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.Uint32Var(&band, "volume-band", 1, "volumes per key range ([master.sequencer] schain_volume_band)")
	f.Uint64Var(&keyMargin, "margin", 0, "file keys left above the S-Chain bound")
	f.Uint64Var(&volumeMargin, "volume-margin", 0, "volume ids left above the S-Chain bound")
	return cmd
}

// weedStopped is seaweedfs down's result.
type weedStopped struct {
	stopped
	Dir            string `json:"dir"`
	NetworkStopped bool   `json:"networkStopped,omitempty"`
}

// weedDemo is seaweedfs demo's result.
type weedDemo struct {
	Uploads []weedDemoUpload `json:"uploads"`
	Check   workload.Check   `json:"check"`
}

// weedDemoUpload is one upload of the demo and where its ids came from.
type weedDemoUpload struct {
	Fid    string `json:"fid"`
	Volume uint32 `json:"volume"`
	Key    uint64 `json:"key"`
	Source string `json:"source"`
}

// weedShadowResult is seaweedfs shadow's result: the comparison and what
// seaweedfs.json holds.
type weedShadowResult struct {
	shadowResult
	Mirror       schainseq.ShadowState `json:"mirror"`
	LegacyMaxKey uint64                `json:"legacy_max_key"`
	LegacyMaxVol uint32                `json:"legacy_max_volume_id"`
}

// weedSwitch is the result of cutover and rollback: the floors recorded
// (or, with DryRun, planned), the bounds they are above, the mode the
// masters run in, and the master.toml to install on your own cluster.
type weedSwitch struct {
	Floors     cutover.Floors  `json:"floors"`
	Bounds     *cutover.Bounds `json:"bounds,omitempty"`
	DryRun     bool            `json:"dryRun,omitempty"`
	Mode       cluster.Mode    `json:"mode,omitempty"`
	MasterToml string          `json:"masterToml,omitempty"`
}
