package main

import (
	"context"
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
	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
)

// networkMarker, in a cluster directory, says that `seaweedfs up` started
// the local S-Chain network, so `seaweedfs down` stops it too.
const networkMarker = "started-network"

func newWeedUpCmd(g *cli.Globals, o *cli.WeedOptions) *cobra.Command {
	var mode string
	var replace, filer, s3 bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local SeaweedFS cluster (3 masters, a volume server) in a sequencer mode",
		Long: `Start a local SeaweedFS cluster on 127.0.0.1: 3 masters (hashicorp raft) and a
volume server, from <build-dir>/weed. The processes keep running after the
command returns; "schain-dev seaweedfs down" stops them.

--mode raft is stock SeaweedFS. schain-shadow and schain need S-Chain: the
local network of <build-dir>/network is used, or started when none runs.
A cluster started in schain mode has no legacy ids, so up records the
cutover floors of an empty cluster first. schain-leaderless masters all
assign; schain-raftless masters run no raft at all (docs/using/seaweedfs-masters.md).

--filer adds a filer on the masters, --s3 an S3 gateway on it (without
identities: any client, unsigned requests included).`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			ctx := cmd.Context()
			m, err := cluster.ParseMode(mode)
			if err != nil {
				return cli.UsageError{Err: err}
			}
			dir := o.ClusterDir()
			if old, err := cluster.Open(dir); err == nil {
				if !replace {
					return cli.UsageError{Err: fmt.Errorf("a cluster is already in %s (mode %s): use it, `schain-dev seaweedfs down`, or --replace", dir, old.Mode())}
				}
				fmt.Fprintf(g.ErrOut, "stopping the cluster in %s...\n", dir)
				if err := old.Stop(ctx); err != nil {
					return err
				}
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			cfg := cluster.DefaultConfig(filepath.Join(o.BuildDir, "weed"), dir, m)
			cfg.Detach, cfg.Progress, cfg.Filer, cfg.S3 = true, g.ErrOut, filer, s3
			started := false
			defer func() {
				// A network this command started for a cluster that did not
				// start is stopped again.
				if started && err != nil {
					_ = localnet.StopAll(context.Background(), filepath.Join(o.BuildDir, "network"), nil)
				}
			}()
			if m != cluster.ModeRaft {
				n, fresh, nerr := ensureNetwork(ctx, g, o.BuildDir)
				started = fresh
				if nerr != nil {
					return nerr
				}
				cfg.SChain = cluster.SChain{URIs: n.ChainURIsBase(), Chain: n.ChainID.String(), TokenFile: n.TokenPath(), Prefix: o.Prefix}
				if m == cluster.ModeSChain || m.Leaderless() {
					if err := freshCutover(ctx, g, n, o.Prefix); err != nil {
						return err
					}
				}
			}
			c, err := cluster.Start(ctx, cfg)
			if err != nil {
				return err
			}
			if started {
				if err := os.WriteFile(filepath.Join(dir, networkMarker), []byte("schain-dev seaweedfs up started the local network\n"), 0o644); err != nil {
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
func ensureNetwork(ctx context.Context, g *cli.Globals, buildDir string) (*localnet.Network, bool, error) {
	root := filepath.Join(buildDir, "network")
	if n, err := localnet.Open(ctx, root, nil); err == nil && chainAnswers(ctx, n) {
		fmt.Fprintf(g.ErrOut, "using the running S-Chain network %s\n", n.Dir)
		return n, false, nil
	}
	_ = localnet.StopAll(ctx, root, nil)
	cfg := localnet.DefaultConfig(buildDir)
	cfg.Progress = g.ErrOut
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
func freshCutover(ctx context.Context, g *cli.Globals, n *localnet.Network, prefix string) error {
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
	fmt.Fprintf(g.ErrOut, "S-Chain floors for %s/: file keys >= %d, volume ids >= %d\n", prefix, f.FileKey, f.VolumeID)
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

func printCluster(ctx context.Context, g *cli.Globals, c *cluster.Cluster) error {
	o, fs := clusterView(ctx, c)
	return g.Emit(o, fs)
}

// clusterView is the cluster's result and its readable fields.
func clusterView(ctx context.Context, c *cluster.Cluster) (clusterOut, []cli.Field) {
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
	fs := []cli.Field{
		{Key: "cluster", Value: c.Dir()}, {Key: "mode", Value: c.Mode()}, {Key: "masters", Value: strings.Join(o.Masters, ", ")}, {Key: "leader", Value: leader},
		{Key: "volume server", Value: o.Volume}, {Key: "processes", Value: strings.Join(alive, ", ")},
	}
	if c.Mode() != cluster.ModeRaft {
		fs = append(fs, cli.Field{Key: "S-Chain", Value: fmt.Sprintf("chain %s, ranges %s/..., %d nodes", sc.Chain, sc.Prefix, len(sc.URIs))})
	}
	fs = append(fs,
		cli.Field{Key: "upload", Value: fmt.Sprintf("curl -s 'http://%s/dir/assign' ; or: schain-dev seaweedfs demo", o.Masters[0])})
	if f := c.FilerAddr(); f != "" {
		fs = append(fs, cli.Field{Key: "filer", Value: f})
	}
	if e := c.S3Endpoint(); e != "" {
		fs = append(fs, cli.Field{Key: "S3", Value: "http://" + e})
	}
	fs = append(fs,
		cli.Field{Key: "logs", Value: filepath.Join(c.Dir(), "master<N>/master.log, volume/volume.log")},
		cli.Field{Key: "stop it", Value: "schain-dev seaweedfs down"})
	return o, fs
}

func newWeedDownCmd(g *cli.Globals, o *cli.WeedOptions) *cobra.Command {
	var keepNetwork bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local SeaweedFS cluster (and the S-Chain network up started)",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := cluster.Open(o.ClusterDir())
			if errors.Is(err, cluster.ErrNoCluster) {
				msg := "no SeaweedFS cluster in " + o.ClusterDir()
				return g.EmitLine(weedStopped{stopped: stopped{Reason: msg}, Dir: o.ClusterDir()}, msg)
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
				if err := localnet.StopAll(ctx, filepath.Join(o.BuildDir, "network"), nil); err != nil && !errors.Is(err, localnet.ErrNoNetwork) {
					return err
				}
				_ = os.Remove(filepath.Join(c.Dir(), networkMarker))
				res.NetworkStopped = true
				text += "\nthe S-Chain network up started is stopped"
			}
			return g.EmitLine(res, text)
		},
	}
	cmd.Flags().BoolVar(&keepNetwork, "keep-network", false, "leave the S-Chain network running")
	return cmd
}

func newWeedStatusCmd(g *cli.Globals, o *cli.WeedOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the local cluster's processes, leader, mode and recorded S-Chain floors",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cluster.Open(o.ClusterDir())
			if err != nil {
				return err
			}
			view, fs := clusterView(cmd.Context(), c)
			if c.Mode() == cluster.ModeRaft && c.SChainConfig().Chain == "" {
				return g.Emit(view, fs)
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
			return g.EmitText(view, func(w io.Writer) error {
				if err := cli.WriteFields(w, fs); err != nil {
					return err
				}
				_, err := fmt.Fprintf(w, "S-Chain floors of %s/: file keys >= %d, volume ids >= %d (0: no cutover recorded)\n", c.SChainConfig().Prefix, f.FileKey, f.VolumeID)
				return err
			})
		},
	}
}

// clusterRouter writes to the S-Chain network the cluster uses.
func clusterRouter(g *cli.Globals, c *cluster.Cluster) (*client.Router, error) {
	sc := c.SChainConfig()
	if sc.Chain == "" {
		return nil, cli.UsageError{Err: errors.New("the cluster has no S-Chain network configured")}
	}
	tok, err := cli.ReadToken(sc.TokenFile)
	if err != nil {
		return nil, err
	}
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = tok
	return client.NewRouter(sc.URIs, sc.Chain, cfg)
}

func newWeedDemoCmd(g *cli.Globals, o *cli.WeedOptions) *cobra.Command {
	var (
		files int
		kill  bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Upload files through the masters, read them back, and say where each id came from",
		Args:  cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cluster.Open(o.ClusterDir())
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
			fmt.Fprintf(g.ErrOut, "uploading %d files through %s (%s mode)...\n", files, strings.Join(c.MasterAddrs(), ", "), c.Mode())
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
			if err := g.EmitText(demo, func(w io.Writer) error { _, err := io.WriteString(w, text.String()); return err }); err != nil {
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
func leaderlessDemo(ctx context.Context, g *cli.Globals, c *cluster.Cluster) error {
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
	fmt.Fprintf(g.ErrOut, "uploading through %s (schain-leaderless: every master assigns; clients try the next master on error)...\n", strings.Join(c.MasterAddrs(), ", "))
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
			fmt.Fprintf(g.Out, "%-26s %5d uploads (%s), %d failed attempts\n", what, len(s.Uploads), strings.Join(parts, ", "), len(s.Failures))
		}
	}
	never := func(map[string]int) bool { return false }
	show("uploading:", 2*time.Second, never)
	killedAt := time.Now()
	if err := c.KillMaster(ctx, i); err != nil {
		return err
	}
	fmt.Fprintf(g.Out, "killed master%d %s (the raft leader) with SIGKILL\n", i+1, victim)
	show("master"+strconv.Itoa(i+1)+" dead:", 3*time.Second, never)
	before := r.Snapshot()
	if err := c.StartMaster(i); err != nil {
		return err
	}
	fmt.Fprintf(g.Out, "restarted master%d\n", i+1)
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
	fmt.Fprintf(g.Out, "longest upload after the kill: %v (retries to the next master included); longest gap between acknowledgements: %v\n",
		longestAfter.Round(time.Millisecond), check.LongestGap.Round(time.Millisecond))
	fmt.Fprintf(g.Out, "read back: %d of %d intact (%d lost, %d altered); keys issued twice: %d; failed uploads: %d\n",
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
