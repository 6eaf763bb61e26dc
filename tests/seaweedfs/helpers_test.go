//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
)

// startCluster starts a cluster for the test in mode, under
// build/e2e-weed/clusters/<test>, its config adjusted by tune (a filer, an
// S3 gateway); it is stopped when the test ends, and its directory (the
// processes' logs) kept only if the test failed.
func startCluster(t *testing.T, mode cluster.Mode, pfx string, extra map[string]string, tune ...func(*cluster.Config)) *cluster.Cluster {
	t.Helper()
	dir := filepath.Join(rootDir(), "clusters", strings.ReplaceAll(t.Name(), "/", "-"))
	require.NoError(t, os.RemoveAll(dir))
	cfg := cluster.DefaultConfig(filepath.Join(buildDir(), "weed"), dir, mode)
	cfg.SChain = cluster.SChain{URIs: network.ChainURIsBase(), Chain: network.ChainID.String(), TokenFile: network.TokenPath(), Prefix: pfx}
	cfg.Sequencer = extra
	cfg.Progress = testWriter{t}
	for _, f := range tune {
		f(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs are kept in %s; their tails:\n%s", dir, c.Logs(40))
		}
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		if err := c.Stop(sctx); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	return c
}

// freshFloors records the cutover floors of a cluster that never ran stock:
// nothing legacy to stay above.
func freshFloors(t *testing.T, pfx string) cutover.Floors {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := cutover.Record(ctx, router(t).Fresh(), pfx, cutover.Plan(cutover.Bounds{}, cutover.Margins{}))
	require.NoError(t, err)
	return f
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// uploads runs a workload in the background until stop is called; stop
// returns the evidence.
type uploads struct {
	r      *workload.Runner
	cancel context.CancelFunc
	done   chan workload.Result
}

func startUploads(t *testing.T, c *cluster.Cluster, workers int) *uploads {
	t.Helper()
	cfg := workload.DefaultConfig(c.MasterAddrs(), "e2e")
	cfg.Workers = workers
	cfg.Spread = c.Mode().Leaderless() // any master assigns
	r, err := workload.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	u := &uploads{r: r, cancel: cancel, done: make(chan workload.Result, 1)}
	go func() { u.done <- r.Run(ctx) }()
	t.Cleanup(func() { u.stop() })
	return u
}

// stop ends the uploads (idempotent) and returns the evidence.
func (u *uploads) stop() workload.Result {
	u.cancel()
	res := <-u.done
	u.done <- res
	u.r.Close()
	return res
}

// acked is the number of acknowledged uploads so far.
func (u *uploads) acked() int { return len(u.r.Snapshot().Uploads) }

// ackedSince counts acknowledged uploads done after t0.
func (u *uploads) ackedSince(t0 time.Time) int {
	n := 0
	for _, up := range u.r.Snapshot().Uploads {
		if up.Done.After(t0) {
			n++
		}
	}
	return n
}

// ackedAt counts acknowledged uploads assigned by master after t0.
func (u *uploads) ackedAt(master string, t0 time.Time) int {
	n := 0
	for _, up := range u.r.Snapshot().Uploads {
		if up.Master == master && up.Start.After(t0) {
			n++
		}
	}
	return n
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// verify reads every acknowledged upload back and logs the check.
func verify(t *testing.T, res workload.Result) workload.Check {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := workload.Verify(ctx, res)
	t.Logf("evidence: %s", c)
	return c
}

// record writes a scenario's numbers under build/e2e-weed (the baseline of
// stock SeaweedFS, and the S-Chain scenarios beside it).
func record(t *testing.T, name string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(rootDir(), name+".json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	t.Logf("recorded %s:\n%s", path, b)
}

// killLeader kills -9 the cluster's leader and returns it and when.
func killLeader(t *testing.T, c *cluster.Cluster) (string, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	require.NoError(t, err)
	i, err := c.MasterOf(leader)
	require.NoError(t, err)
	at := time.Now()
	require.NoError(t, c.KillMaster(ctx, i))
	t.Logf("killed the leader %s (master%d) with SIGKILL", leader, i+1)
	return leader, at
}

// longestUpload is the longest any upload in flight at some time in
// [from, to] waited, counted from from for one already in flight then.
func longestUpload(res workload.Result, from, to time.Time) time.Duration {
	var d time.Duration
	for _, up := range res.Uploads {
		if up.Done.After(from) && up.Start.Before(to) {
			waited := up.Wait
			if up.Start.Before(from) {
				waited = up.Done.Sub(from)
			}
			d = max(d, waited)
		}
	}
	return d
}

func describe(d time.Duration) string { return fmt.Sprint(d.Round(10 * time.Millisecond)) }

// prefix is a range prefix of its own for each test's cluster.
func prefix(t *testing.T) string {
	return "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + "-" + fmt.Sprint(time.Now().Unix()%100000)
}
