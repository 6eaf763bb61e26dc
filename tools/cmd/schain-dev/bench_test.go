package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/cli"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/benchmark/benchmarktest"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

// TestBenchCommandWithFakes runs the bench command end to end on in-process
// fakes: flags, the run, the tables on stdout, the files, and the stop.
func TestBenchCommandWithFakes(t *testing.T) {
	require := require.New(t)
	out := t.TempDir()
	legacy, schain := benchmarktest.New(3, time.Millisecond, true), benchmarktest.New(3, time.Millisecond, false)
	stopped := false
	start := func(_ context.Context, o benchOptions, _ io.Writer) ([]benchmark.Target, func(), error) {
		require.Equal(out, o.out)
		require.Equal(8, o.settings.Ranges)
		return []benchmark.Target{
			{Name: "legacy-fake", SharedKeySpace: true, FailoverAfter: o.legacyAfter, Cluster: legacy},
			{Name: "schain", SChain: true, FailoverAfter: o.schainAfter, Cluster: schain},
		}, func() { stopped = true }, nil
	}
	var liveness []time.Duration
	startLiveness := func(_ context.Context, _ benchOptions, round time.Duration, _ io.Writer) (benchmark.Target, func(), error) {
		liveness = append(liveness, round)
		return benchmark.Target{Name: "schain", SChain: true, Cluster: benchmarktest.New(3, time.Millisecond, false)}, func() {}, nil
	}
	g := &cli.Globals{}
	var stdout, stderr bytes.Buffer
	g.Out, g.ErrOut = &stdout, &stderr
	cmd := benchCmd(g, benchSystems{start: start, startLiveness: startLiveness})
	cmd.SetArgs([]string{"--out", out, "--ranges", "8", "--clients", "4", "--rounds", "2", "--round-duration", "100ms",
		"--failover-before", "100ms", "--legacy-after", "400ms", "--schain-after", "400ms", "--stall-floor", "250ms",
		"--schain-rounds", "5s,7s", "--liveness-window", "100ms", "--liveness-after", "400ms"})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(cmd.ExecuteContext(ctx), stderr.String())
	require.True(stopped, "the systems are stopped")

	require.Contains(stdout.String(), "| system | req/s | ids/s | p50 | p95 | p99 |")
	require.Regexp(`\| legacy-fake \| [0-9,]+ \| [0-9,]+ \| .* \| [0-9.]+x \|`, stdout.String())
	require.Contains(stdout.String(), "ranges kept allocating")
	require.Contains(stderr.String(), "failover schain")
	require.Equal([]time.Duration{7 * time.Second}, liveness, "the main network measures its own round (5s)")
	require.Contains(stdout.String(), "Failover per liveness round setting")
	require.Regexp(`\| 5.00s \| 1 \| 10.5s \| main \|`, stdout.String())
	require.Regexp(`\| 7.00s \| 1 \| 14.7s \| own, 7s rounds \|`, stdout.String())
	for _, f := range []string{benchReportFile, benchTablesFile, benchmark.ThroughputFile, benchmark.LatencyFile, benchmark.StallsFile} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(err, f)
		require.Positive(st.Size(), f)
	}
	var rep benchmark.Report
	b, err := os.ReadFile(filepath.Join(out, benchReportFile))
	require.NoError(err)
	require.NoError(json.Unmarshal(b, &rep))
	require.Len(rep.Systems, 2)
	require.Positive(rep.Machine.CPUs)
	require.NotNil(rep.Systems[1].Failover)
	require.Positive(rep.Systems[0].Duplicates.Overlapping, "the fake legacy reissued ids after the kill")
	require.Len(rep.Liveness, 2)
	require.NotNil(rep.Liveness[1].System.Failover)
}

func TestBenchRejectsBadFlags(t *testing.T) {
	code, _, errOut := run(t, "bench", "--legacy-modes", "paxos", "--schain=false")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, `"paxos"`)
	code, _, errOut = run(t, "bench", "--clients", "0")
	require.Equal(t, exitUsage, code, errOut)
	code, _, errOut = run(t, "bench", "--schain-modes", "turbo", "--legacy-modes", "")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, `"turbo"`)
	code, _, errOut = run(t, "bench", "--schain-modes", "per-request", "--schain-failover", "pooled", "--legacy-modes", "")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--schain-failover")
	code, _, errOut = run(t, "bench", "--schain-modes", "uncertified", "--schain-failover", "uncertified", "--legacy-modes", "")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "the failover runs on the main network")
	code, _, errOut = run(t, "bench", "--schain-nodes", "1", "--legacy-modes", "")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--schain-nodes 1 (hint: 2 to 16")
	code, _, errOut = run(t, "bench", "--schain-nodes", "1000", "--legacy-modes", "")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--schain-nodes 1000")
}

// TestBenchLegacyProcesses starts the legacy allocator as 3 processes (this
// test binary acting as `schain-dev legacy serve`), finds and kills the leader,
// sees a new leader take over, and stops the rest.
func TestBenchLegacyProcesses(t *testing.T) {
	require := require.New(t)
	t.Setenv(asCLIEnv, "1")
	self, err := os.Executable()
	require.NoError(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := benchmark.StartLegacy(ctx, benchmark.LegacyConfig{
		Binary: self, Dir: t.TempDir(), Mode: legacyraft.ModeReplicated, Nodes: 3, WarmUp: 0, Timeout: 2 * time.Second,
	})
	require.NoError(err)
	defer func() { require.NoError(c.Stop(context.Background())) }()

	ranges := []string{"a", "b", "c"}
	owners, err := c.Owners(ctx, ranges)
	require.NoError(err)
	leader := owners[0]
	require.Equal([]string{leader, leader, leader}, owners, "one raft group: the leader serves every range")
	first, n, err := c.Allocate(ctx, "a", 3)
	require.NoError(err)
	require.Equal(uint64(3), n)

	require.NoError(c.Kill(ctx, leader))
	require.Error(c.Kill(ctx, leader), "a dead node cannot be killed twice")
	require.Eventually(func() bool {
		o, err := c.Owners(ctx, ranges)
		return err == nil && o[0] != "" && o[0] != leader
	}, 30*time.Second, 50*time.Millisecond, "a new leader is elected")
	var next uint64
	require.Eventually(func() bool {
		next, _, err = c.Allocate(ctx, "a", 1)
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	require.GreaterOrEqual(next, first+3, "the replicated counter survives the leader")
}

// TestNetworkStartBoundsNodes: a --nodes out of bounds is a usage error
// found before a running network is looked at (it would otherwise be
// stopped for a network that cannot start).
func TestNetworkStartBoundsNodes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"0", "17"} {
		code, _, errOut := run(t, "network", "start", "--build-dir", dir, "--nodes", n)
		require.Equal(t, exitUsage, code, errOut)
		require.Contains(t, errOut, "--nodes "+n+" (hint: 1 to 16")
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was opened or written")
}
