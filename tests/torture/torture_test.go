//go:build e2e

package torture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
	"github.com/s-chain/schain/tests/history"
)

// The short run's defaults (`make e2e`); `make torture` sets both.
const (
	defaultDuration = 150 * time.Second
	defaultSeed     = 1
	defaultClients  = 8
)

// settings are the run's knobs, from the environment: TORTURE_DURATION
// (a Go duration: the workload's length), TORTURE_SEED (the nemesis's
// schedule and the clients' choices) and TORTURE_CLIENTS.
type settings struct {
	duration time.Duration
	seed     uint64
	clients  int
}

func readSettings() (settings, error) {
	s := settings{duration: defaultDuration, seed: defaultSeed, clients: defaultClients}
	if v := os.Getenv("TORTURE_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("TORTURE_DURATION=%q: a positive Go duration (10m, 150s)", v)
		}
		s.duration = d
	}
	if v := os.Getenv("TORTURE_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("TORTURE_SEED=%q: an unsigned integer", v)
		}
		s.seed = seed
	}
	if v := os.Getenv("TORTURE_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("TORTURE_CLIENTS=%q: a positive integer", v)
		}
		s.clients = n
	}
	return s, nil
}

// TestTorture runs the workload under the nemesis for the run's duration,
// heals, and checks the whole history: any anomaly fails it.
func TestTorture(t *testing.T) {
	cfg, err := readSettings()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	run := fmt.Sprintf("torture-seed%d-%s", cfg.seed, began.UTC().Format("20060102T150405Z"))
	t.Logf("torture run %s: %v of workload, seed %d (repeat with TORTURE_SEED=%d), %d clients", run, cfg.duration, cfg.seed, cfg.seed, cfg.clients)

	start := time.Now()
	clock := func() int64 { return int64(time.Since(start)) }
	rec := history.NewRecorder(clock)
	r, err := router(network)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	// Names of this run only: no earlier run's state shows in its history.
	sh := newShape(fmt.Sprintf("t%d", began.Unix()%1_000_000), cfg.clients)
	starts, err := counterStarts(r, sh.counters)
	if err != nil {
		t.Fatalf("reading the counters before the run: %v", err)
	}
	w := &workload{shape: sh, r: r, rec: rec, seed: cfg.seed, clock: clock}
	nm := newNemesis(t, network, cfg.seed, clock)

	ctx, stopWorkload := context.WithTimeout(context.Background(), cfg.duration)
	defer stopWorkload()
	nemesisCtx, stopNemesis := context.WithCancel(ctx)
	defer stopNemesis()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.run(ctx) }()
	go func() { defer wg.Done(); nm.run(nemesisCtx) }()
	wg.Wait() // the nemesis healed the fault in force on its way out
	stopNemesis()
	worked := time.Since(began)

	h := withDuplicates(rec.History(), w.duplicates)
	dir := filepath.Join(localnettest.BuildDir(), "history", run)
	checkStart := time.Now()
	rep, err := history.Check(h, history.Options{VisualizationDir: dir, Timeout: 5 * time.Minute, CounterStart: starts})
	if err != nil {
		t.Fatalf("checking the history: %v", err)
	}
	if err := writeHistory(dir, h, rep, nm.log(), w.retried); err != nil {
		t.Errorf("writing the history: %v", err)
	}
	t.Logf("TORTURE SUMMARY %s\n\tduration: %v of workload and faults, %v checking\n\tseed: %d (TORTURE_SEED=%d TORTURE_DURATION=%v make torture)\n\toperations: %s\n\twrites answered after a retry of an exchange that may have applied: %d (retried.txt); exchanges of retried writes recorded as Info operations of their own: %d\n\tfaults injected: %s\n\tcheck: %s\n\thistory: %s",
		run, worked.Round(time.Second), time.Since(checkStart).Round(time.Millisecond), cfg.seed, cfg.seed, cfg.duration,
		statuses(h), len(w.retried), len(h)-len(rec.History()), nm.summary(), rep.String(), dir)
	for _, err := range nm.errors() {
		t.Errorf("nemesis: %v", err)
	}
	for _, a := range rep.Anomalies {
		t.Errorf("anomaly: %v", a)
	}
	if len(rep.Undecided) > 0 {
		t.Errorf("keys porcupine did not decide within the timeout: %q", rep.Undecided)
	}
}

// router writes with the network's token, as every S-Chain client must,
// through the tracking HTTP client. A waited write gives up on a silent
// node after 20 s, so the router looks its range's owner up again.
func router(n *localnet.Network) (*client.Router, error) {
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = n.Token
	cfg.Client.HTTPClient = httpClient()
	cfg.Client.WaitTimeout = 20 * time.Second
	return client.NewRouter(n.ChainURIsBase(), n.ChainID.String(), cfg)
}

// nodeClient is node nd's client, for the nemesis's reads.
func nodeClient(nd localnet.Node) (*client.Client, error) {
	cfg := client.DefaultConfig()
	cfg.Timeout = 5 * time.Second
	return client.New(nd.URI, network.ChainID.String(), cfg)
}

// counterStarts reads each counter's next id before the run.
func counterStarts(r *client.Router, counters []string) (map[string]uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make(map[string]uint64, len(counters))
	for _, rk := range counters {
		a, err := r.GetAllocation(ctx, rk)
		if err != nil {
			return nil, fmt.Errorf("counter %s: %w", rk, err)
		}
		out[rk] = a.Next
	}
	return out, nil
}

// statuses counts the history's operations by how they ended.
func statuses(h history.History) string {
	n := map[history.Status]int{}
	for _, op := range h {
		n[op.Status]++
	}
	return fmt.Sprintf("%d recorded: %d ok, %d fail, %d info, %d pending", len(h), n[history.Ok], n[history.Failed], n[history.Unknown], n[history.Pending])
}

// writeHistory writes under dir every operation, one a line
// (history.txt), the report (report.txt), the faults with their times on
// the history's clock (faults.txt) and the writes answered after a retry
// (retried.txt): what a failing run keeps for its analysis.
func writeHistory(dir string, h history.History, rep history.Report, faults, retried []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "history.txt"))
	if err != nil {
		return err
	}
	for _, op := range h {
		fmt.Fprintln(f, op)
	}
	if err := f.Close(); err != nil {
		return err
	}
	var report []byte
	report = fmt.Appendf(report, "%s\n", rep.String())
	for _, a := range rep.Anomalies {
		report = fmt.Appendf(report, "%v\n", a)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.txt"), report, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "faults.txt"), []byte(strings.Join(faults, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "retried.txt"), []byte(strings.Join(retried, "\n")+"\n"), 0o644)
}
