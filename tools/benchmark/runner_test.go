package benchmark_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/internal/buffer"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/benchmark/benchmarktest"
)

// quick are settings that run the whole bench in about two seconds.
func quick() benchmark.Settings {
	s := benchmark.DefaultSettings()
	s.Ranges, s.Clients, s.Rounds = 12, 6, 2
	s.RoundDuration, s.RequestTimeout = 100*time.Millisecond, time.Second
	s.FailoverBefore, s.StallFloor = 100*time.Millisecond, 250*time.Millisecond
	s.WarmUpTimeout = 10 * time.Second
	return s
}

func TestRunnerMeasuresFakes(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	legacy := benchmarktest.New(3, time.Millisecond, true)
	schain := benchmarktest.New(3, time.Millisecond, false)
	targets := []benchmark.Target{
		{Name: "legacy", SharedKeySpace: false, FailoverAfter: 600 * time.Millisecond, Cluster: legacy},
		{Name: "schain", SChain: true, FailoverAfter: 600 * time.Millisecond, Cluster: schain},
	}
	var progress bytes.Buffer
	r, err := benchmark.NewRunner(quick(), targets, &progress)
	require.NoError(err)
	rep, err := r.Run(ctx)
	require.NoError(err)
	require.Len(rep.Order, 4)
	require.Contains(progress.String(), "round 2/2 (4 of 4): legacy")

	ranges := quick().RangeKeys()
	for i, sys := range rep.Systems {
		require.Len(sys.Rounds, 2)
		require.Positive(sys.MedianReqPerSec)
		require.Zero(sys.Steady.Failures)
		require.InDelta(4*sys.MedianReqPerSec, sys.MedianIDsPerSec, 4*sys.MedianReqPerSec*0.01)
		f := sys.Failover
		require.NotNil(f)
		victim := benchmark.BusiestNode(mustOwners(t, targets[i].Cluster, ranges))
		require.Equal(victim, f.Victim)
		for k, rf := range f.Ranges {
			require.Equal(ranges[k], rf.Range)
			if rf.Owner == victim {
				require.False(rf.Kept, "range %s of the dead node", rf.Range)
				require.True(rf.Stall.Censored)
				require.Equal(time.Duration(-1), rf.Stall.Recovered)
			} else {
				require.True(rf.Kept, "range %s of a live node stalled %v", rf.Range, rf.Stall.Longest)
			}
		}
		require.Less(f.Global.Longest, f.Threshold, "live ranges kept the system allocating")
		require.Less(f.LongestOthers.Longest, f.Threshold)
		require.True(f.LongestVictim.Censored)
	}
	// The fake legacy restarts its counters at the kill: ids issued twice.
	require.Positive(rep.Systems[0].Duplicates.Overlapping)
	require.Zero(rep.Systems[1].Duplicates.Overlapping)
	require.Positive(rep.Systems[1].Duplicates.Allocations)
}

func mustOwners(t *testing.T, c benchmark.Cluster, ranges []string) []string {
	owners, err := c.Owners(context.Background(), ranges)
	require.NoError(t, err)
	return owners
}

func TestRunnerStopsOnCancel(t *testing.T) {
	require := require.New(t)
	s := quick()
	s.RoundDuration = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	var progress buffer.Buffer
	r, err := benchmark.NewRunner(s, []benchmark.Target{{Name: "fake", Cluster: benchmarktest.New(2, 0, false)}}, &progress)
	require.NoError(err)
	done := make(chan error, 1)
	go func() { _, err := r.Run(ctx); done <- err }()
	require.Eventually(func() bool { return bytes.Contains(progress.Bytes(), []byte("round 1/2")) }, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestSettingsVerify(t *testing.T) {
	require := require.New(t)
	require.NoError(benchmark.DefaultSettings().Verify())
	s := benchmark.DefaultSettings()
	s.Clients = 0
	require.Error(s.Verify())
	s = benchmark.DefaultSettings()
	s.RoundDuration = 0
	require.Error(s.Verify())
	_, err := benchmark.NewRunner(benchmark.DefaultSettings(), nil, nil)
	require.Error(err)
	require.Equal([]string{"bench-000", "bench-001"}, func() []string { s := benchmark.DefaultSettings(); s.Ranges = 2; return s.RangeKeys() }())
}

func TestRunnerSkipsFailoverWithoutDuration(t *testing.T) {
	require := require.New(t)
	s := quick()
	s.Rounds = 1
	fake := benchmarktest.New(2, 0, false)
	r, err := benchmark.NewRunner(s, []benchmark.Target{{Name: "fake", Cluster: fake}}, nil)
	require.NoError(err)
	rep, err := r.Run(context.Background())
	require.NoError(err)
	require.Nil(rep.Systems[0].Failover)
	owners := mustOwners(t, fake, s.RangeKeys())
	_, _, err = fake.Allocate(context.Background(), s.RangeKeys()[0], 1)
	require.NoError(err, "nothing was killed (owner %s)", owners[0])
}

// TestRunnerChecksOneNetworkTogether: two write paths of one network issue
// ids from the same counters, so an id handed out by both is issued twice,
// although neither path repeats itself. Two fakes with their own counters
// stand in for such a pair.
func TestRunnerChecksOneNetworkTogether(t *testing.T) {
	require := require.New(t)
	s := quick()
	s.Rounds, s.Failover = 1, false
	for _, network := range []string{"", "same"} {
		r, err := benchmark.NewRunner(s, []benchmark.Target{
			{Name: "path-a", SChain: true, Network: network, Cluster: benchmarktest.New(2, 0, false)},
			{Name: "path-b", SChain: true, Network: network, Cluster: benchmarktest.New(2, 0, false)},
		}, nil)
		require.NoError(err)
		rep, err := r.Run(context.Background())
		require.NoError(err)
		for _, sys := range rep.Systems {
			if network == "" {
				require.Zero(sys.Duplicates.Overlapping, "%s on its own never repeats an id", sys.Name)
			} else {
				require.Positive(sys.Duplicates.Overlapping, "%s and its sibling hand out the same ids", sys.Name)
			}
		}
	}
}

// ticking is a finality source whose every reading adds ten blocks and
// ten observations of 5-10 ms.
type ticking struct{ reads uint64 }

func (f *ticking) FinalityCounts(context.Context) (benchmark.FinalityCounts, error) {
	f.reads++
	n := 10 * f.reads
	return benchmark.FinalityCounts{Bounds: []float64{0.005, 0.01}, Cumulative: []uint64{0, n}, Count: n, Blocks: n}, nil
}

// metered is a CPU source whose every reading adds step, and five blocks
// that each took decide from issue to acceptance and carried two
// transactions.
type metered struct {
	reads  int
	step   time.Duration
	decide time.Duration
}

func (m *metered) CPUTime(context.Context) (benchmark.CPUReading, error) {
	m.reads++
	n := 5 * uint64(m.reads)
	return benchmark.CPUReading{Used: time.Duration(m.reads) * m.step, Height: n, Consensus: time.Duration(n) * m.decide, Decided: n, Txs: 2 * n}, nil
}

// TestRunnerReadsCPUAroundRounds: a target with a CPU source gets the CPU
// its processes spent in its own rounds (read before and after each, not
// between them), over the requests those rounds answered; the baseline
// line compares it with its baseline's.
func TestRunnerReadsCPUAroundRounds(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	with, without := &metered{step: 300 * time.Millisecond, decide: 80 * time.Millisecond}, &metered{step: 200 * time.Millisecond, decide: 60 * time.Millisecond}
	s := quick()
	s.Failover = false
	targets := []benchmark.Target{
		{Name: "legacy", Cluster: benchmarktest.New(3, time.Millisecond, true)},
		{Name: "schain", SChain: true, Cluster: benchmarktest.New(3, time.Millisecond, false), CPU: with},
		{Name: "schain-uncertified", SChain: true, Cluster: benchmarktest.New(3, time.Millisecond, false), Baseline: "schain", CPU: without},
	}
	r, err := benchmark.NewRunner(s, targets, nil)
	require.NoError(err)
	rep, err := r.Run(ctx)
	require.NoError(err)
	require.Nil(rep.Systems[0].CPU)
	u := rep.Systems[1].CPU
	require.NotNil(u)
	require.Equal(4, with.reads, "before and after each of its 2 rounds")
	require.Equal(2*300*time.Millisecond, u.Used, "one step per round: the readings between rounds are not counted")
	require.Positive(u.Requests)
	var answered uint64
	for _, rd := range rep.Systems[1].Rounds {
		answered += rd.Requests
	}
	require.Equal(int(answered), u.Requests, "the requests its rounds count")
	require.Equal(u.Used/time.Duration(u.Requests), u.PerRequest())
	require.Equal(uint64(10), u.Blocks, "five blocks between the readings of each round")
	require.Equal(60*time.Millisecond, u.PerBlock())
	require.Equal(uint64(10), u.Decided)
	require.Equal(80*time.Millisecond, u.PerDecision(), "blocks decided within its rounds only")
	require.Equal(uint64(20), u.Txs, "the transactions of its rounds' blocks")
	require.InDelta(u.Used.Seconds()/u.Wall.Seconds(), u.Cores(), 1e-9)
	var out bytes.Buffer
	require.NoError(benchmark.WriteTables(&out, rep))
	require.Contains(out.String(), "| system | cores busy | CPU per request | requests | CPU per block | blocks | requests per block | requests per transaction | issue → accept |")
	require.Contains(out.String(), "| 60.00 ms | 10 |")
	require.Contains(out.String(), fmt.Sprintf(" | %.1f | %.1f | 80.0ms |\n", float64(u.Requests)/10, float64(u.Requests)/20), "requests per block, per transaction")
	require.Contains(out.String(), "; per block 60.00 ms vs 40.00 ms: +50%; a block from issue to acceptance 80.0ms vs 60.0ms.")
}

// TestRunnerReadsFinalityAroundRounds: a target with a finality source gets
// the latency and blocks of its own rounds, read before and after each.
func TestRunnerReadsFinalityAroundRounds(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := &ticking{}
	s := quick()
	s.Failover = false
	targets := []benchmark.Target{
		{Name: "legacy", Cluster: benchmarktest.New(3, time.Millisecond, true)},
		{Name: "schain", SChain: true, Cluster: benchmarktest.New(3, time.Millisecond, false), Finality: src},
		{Name: "schain-uncertified", SChain: true, Cluster: benchmarktest.New(3, time.Millisecond, false), Baseline: "schain"},
	}
	r, err := benchmark.NewRunner(s, targets, nil)
	require.NoError(err)
	rep, err := r.Run(ctx)
	require.NoError(err)
	require.Nil(rep.Systems[0].Finality)
	f := rep.Systems[1].Finality
	require.NotNil(f)
	require.Equal(uint64(4), src.reads, "before and after each of its 2 rounds")
	require.Equal(uint64(20), f.Blocks, "10 blocks between the readings of each round")
	require.Greater(f.P50, 5*time.Millisecond)
	require.LessOrEqual(f.P50, 10*time.Millisecond)
	require.Positive(f.BlockInterval)
	var out bytes.Buffer
	require.NoError(benchmark.WriteTables(&out, rep))
	require.Contains(out.String(), "accept → final p50")
	require.Nil(rep.Systems[2].Finality)
	require.Equal("schain", rep.Systems[2].BaselineOf)
	require.Contains(out.String(), "schain against schain-uncertified, its baseline")
}
