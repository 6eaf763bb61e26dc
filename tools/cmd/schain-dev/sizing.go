package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tools/benchmark"
)

// sizingPhase is one window of the sizing run and what each node used in it.
type sizingPhase struct {
	Name string        `json:"name"`
	Wall time.Duration `json:"wall_ns"`
	// Requests and IDs are the successful allocations of the window.
	Requests int       `json:"requests"`
	IDs      uint64    `json:"ids"`
	Nodes    []nodeUse `json:"nodes"`
	// DiskBytes is the growth of every node's database over the window,
	// summed; BytesPerMillion its mean per node per million requests.
	DiskBytes       int64   `json:"disk_bytes"`
	BytesPerMillion float64 `json:"bytes_per_million_requests"`
}

// nodeUse is one validator over one window.
type nodeUse struct {
	Node string `json:"node"`
	// Cores is the CPU the node and its plugin used over the window's
	// wall time; NodeRSS and PluginRSS their resident memory at its end.
	Cores     float64 `json:"cores"`
	NodeRSS   uint64  `json:"node_rss_bytes"`
	PluginRSS uint64  `json:"plugin_rss_bytes"`
	DiskBytes int64   `json:"disk_bytes"`
}

func newBenchSizingCmd(g *cli.Globals) *cobra.Command {
	var (
		buildDir, out          string
		nodes, clients, ranges int
		count                  uint64
		idle, load             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sizing",
		Short: "Measure what a validator uses: RSS and CPU idle and under load, disk growth per million allocations",
		Long: `Start a local network of --nodes validators (under <out>/network) and
measure, per validator (the avalanchego node and its S-Chain plugin):
resident memory and CPU over --idle with no client, then over --load of
per-request allocations (a transaction each) and --load of pooled ones
(answered from committed reservations), --clients closed-loop clients on
--ranges ranges; and the growth of every node's database per million
requests of each kind. Writes sizing.json and sizing.md to --out
(docs/operating/deployment.md, Sizing, quotes them).`,
		Args: cli.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSizing(cmd.Context(), g, buildDir, out, nodes, clients, ranges, count, idle, load)
		},
	}
	f := cmd.Flags()
	f.StringVar(&buildDir, "build-dir", cli.DefaultBuildDir(), "where avalanchego and the plugin are")
	f.StringVar(&out, "out", filepath.Join(cli.DefaultBuildDir(), "sizing"), "directory for the network and the results")
	f.IntVar(&nodes, "nodes", localnet.DefaultNodes, "validators")
	f.IntVar(&clients, "clients", 16, "closed-loop clients under load")
	f.IntVar(&ranges, "ranges", 16, "ranges the clients write")
	f.Uint64Var(&count, "count", 4, "ids per request")
	f.DurationVar(&idle, "idle", time.Minute, "the idle window")
	f.DurationVar(&load, "load", time.Minute, "each load window")
	return cmd
}

func runSizing(ctx context.Context, g *cli.Globals, buildDir, out string, nodes, clients, ranges int, count uint64, idle, load time.Duration) error {
	cfg := localnet.DefaultConfig(buildDir)
	cfg.RootDir, cfg.Progress, cfg.Nodes = filepath.Join(out, "network"), g.ErrOut, nodes
	_ = localnet.StopAll(ctx, cfg.RootDir, nil)
	if err := os.RemoveAll(cfg.RootDir); err != nil {
		return err
	}
	n, err := localnet.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), benchStopTimeout)
		defer cancel()
		_ = localnet.StopAll(sctx, cfg.RootDir, nil)
	}()
	sc, err := benchmark.AttachSChain(n)
	if err != nil {
		return err
	}
	keys := make([]string, ranges)
	for i := range keys {
		keys[i] = fmt.Sprintf("sizing-%02d", i)
	}
	fmt.Fprintln(g.ErrOut, "sizing: warming up (every range allocates once)")
	warm := benchmark.Start(ctx, benchmark.Load{System: sc, Ranges: keys, Clients: ranges, Pick: benchmark.PerRange(), Count: count, Timeout: 30 * time.Second})
	for warm.Allocating(time.Minute) < ranges && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond) // polling the warm-up's progress
	}
	warm.Stop()
	var phases []sizingPhase
	for _, ph := range []struct {
		name string
		sys  benchmark.System
		wall time.Duration
	}{{"idle", nil, idle}, {"per-request", sc, load}, {"pooled", sc.Pooled(), load}} {
		fmt.Fprintf(g.ErrOut, "sizing: %s for %v\n", ph.name, ph.wall)
		p, err := sizingWindow(ctx, n, ph.name, ph.sys, ph.wall, keys, clients, count)
		if err != nil {
			return err
		}
		phases = append(phases, p)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(phases, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "sizing.json"), b, 0o644); err != nil {
		return err
	}
	var md strings.Builder
	writeSizing(&md, phases, nodes, clients, ranges, count)
	if err := os.WriteFile(filepath.Join(out, "sizing.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	return g.EmitText(phases, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%soutputs: %s/{sizing.json,sizing.md}\n", md.String(), out)
		return err
	})
}

// sizingWindow runs sys (nil: nothing) for wall and reads every node's use
// around it.
func sizingWindow(ctx context.Context, n *localnet.Network, name string, sys benchmark.System, wall time.Duration, keys []string, clients int, count uint64) (sizingPhase, error) {
	type reading struct {
		use  benchmark.TreeUse
		disk int64
	}
	read := func() ([]reading, error) {
		var rs []reading
		for _, nd := range n.Nodes {
			u, err := benchmark.ProcessTreeUse(nd.PID)
			if err != nil {
				return nil, err
			}
			rs = append(rs, reading{u, dirSize(filepath.Join(n.Dir, nd.NodeID.String(), "db"))})
		}
		return rs, nil
	}
	before, err := read()
	if err != nil {
		return sizingPhase{}, err
	}
	began := time.Now()
	p := sizingPhase{Name: name}
	if sys == nil {
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(wall): // the idle window itself
		}
	} else {
		d := benchmark.Start(ctx, benchmark.Load{System: sys, Ranges: keys, Clients: clients, Pick: benchmark.RoundRobin(len(keys)), Count: count, Timeout: 30 * time.Second})
		select {
		case <-ctx.Done():
		case <-time.After(wall): // the load window itself
		}
		samples, _ := d.Stop()
		for _, s := range samples {
			if !s.Failed {
				p.Requests++
				p.IDs += s.Count
			}
		}
	}
	p.Wall = time.Since(began)
	after, err := read()
	if err != nil {
		return sizingPhase{}, err
	}
	for i := range n.Nodes {
		u := nodeUse{
			Node:    fmt.Sprintf("node%d", i+1),
			Cores:   (after[i].use.CPU - before[i].use.CPU).Seconds() / p.Wall.Seconds(),
			NodeRSS: after[i].use.RootRSS, PluginRSS: after[i].use.RSS - after[i].use.RootRSS,
			DiskBytes: after[i].disk - before[i].disk,
		}
		p.Nodes = append(p.Nodes, u)
		p.DiskBytes += u.DiskBytes
	}
	if p.Requests > 0 {
		p.BytesPerMillion = float64(p.DiskBytes) / float64(len(n.Nodes)) / float64(p.Requests) * 1e6
	}
	return p, nil
}

// dirSize is the bytes of every file under dir.
func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

func writeSizing(w io.Writer, phases []sizingPhase, nodes, clients, ranges int, count uint64) {
	fmt.Fprintf(w, "%d validators on one machine; load: %d closed-loop clients, %d ranges, %d ids per request.\n\n", nodes, clients, ranges, count)
	fmt.Fprintln(w, "| window | requests/s | CPU per validator (cores, min–max) | node RSS (MB, min–max) | plugin RSS (MB, min–max) | database growth per validator per million requests |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
	for _, p := range phases {
		cpu, nrss, prss := span(p.Nodes, func(u nodeUse) float64 { return u.Cores }),
			span(p.Nodes, func(u nodeUse) float64 { return float64(u.NodeRSS) / 1e6 }),
			span(p.Nodes, func(u nodeUse) float64 { return float64(u.PluginRSS) / 1e6 })
		growth := "–"
		if p.Requests > 0 {
			growth = fmt.Sprintf("%.0f MB", p.BytesPerMillion/1e6)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.2f–%.2f | %.0f–%.0f | %.0f–%.0f | %s |\n", p.Name, float64(p.Requests)/p.Wall.Seconds(),
			cpu[0], cpu[1], nrss[0], nrss[1], prss[0], prss[1], growth)
	}
}

func span(us []nodeUse, f func(nodeUse) float64) [2]float64 {
	out := [2]float64{f(us[0]), f(us[0])}
	for _, u := range us[1:] {
		out[0], out[1] = min(out[0], f(u)), max(out[1], f(u))
	}
	return out
}
