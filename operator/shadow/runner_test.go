package shadow

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow/legacy"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
	"github.com/s-chain/schain/tools/shadow/legacyraft/legacyrafttest"
)

// counterLegacy is a trivially correct in-memory legacy allocator.
type counterLegacy struct{ next atomic.Uint64 }

func (c *counterLegacy) Allocate(_ context.Context, _ string, count uint64) (legacy.Result, error) {
	end := c.next.Add(count)
	return legacy.Result{First: end - count + 1, Count: count, Leader: "n0", Term: 1}, nil
}

func runnerComparatorConfig() Config {
	cfg := DefaultConfig()
	cfg.LateAfter = 0 // a shared 2-core machine under -race has arbitrary pauses
	cfg.LegacySharedKeySpace = true
	cfg.Gate = GateConfig{MinRequests: 40, MinDuration: 100 * time.Millisecond, BlockOnViolation: true}
	return cfg
}

func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*legacyrafttest.WaitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func TestRunnerValidates(t *testing.T) {
	good := RunConfig{Ranges: RangeKeys("bucket", 1), Workers: 1, Requests: 1, Count: 1, Timeout: time.Second}
	tests := []struct {
		name   string
		mutate func(*RunConfig)
		want   error
	}{
		{"no ranges", func(c *RunConfig) { c.Ranges = nil }, errNoRanges},
		{"no workers", func(c *RunConfig) { c.Workers = 0 }, errNoWorkers},
		{"no count", func(c *RunConfig) { c.Count = 0 }, errNoCount},
		{"unbounded", func(c *RunConfig) { c.Requests = 0 }, errNoBound},
		{"no timeout", func(c *RunConfig) { c.Timeout = 0 }, errNoTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.mutate(&cfg)
			_, err := NewRunner(Sides{Legacy: &counterLegacy{}, SChain: newFakeSChain()}, cfg, runnerComparatorConfig())
			require.ErrorIs(t, err, tt.want)
		})
	}
	_, err := NewRunner(Sides{}, good, runnerComparatorConfig())
	require.ErrorIs(t, err, errNoSide)
}

func TestRunnerCleanRun(t *testing.T) {
	require := require.New(t)
	cfg := RunConfig{Ranges: RangeKeys("bucket", 3), Workers: 4, Requests: 300, Count: 2, Timeout: time.Second}
	r, err := NewRunner(Sides{Legacy: &counterLegacy{}, SChain: newFakeSChain()}, cfg, runnerComparatorConfig())
	require.NoError(err)
	rep, err := r.Run(runCtx(t))
	require.NoError(err)
	require.Equal(uint64(300), rep.Requests)
	require.Equal(rep.Requests, rep.Agreed)
	require.Empty(rep.Counts)
	require.Equal(uint64(300), rep.Latency[SideLegacy].Count)
	require.Equal(uint64(2*300+1), r.Floors(0).Global)
}

// TestSeaweedFSLeaderKill runs the shadow against a 3-node seaweedfs-mode
// legacy cluster, kills the leader mid-run, and checks that the legacy
// reissue is reported as a defect, S-Chain shows no violation, the gate
// resets and reopens, and cutover floors clear every legacy id.
func TestSeaweedFSLeaderKill(t *testing.T) {
	require := require.New(t)
	lcfg := legacyrafttest.FastConfig()
	lcfg.WarmUp = 200 * time.Millisecond
	c := legacyrafttest.Start(t, 3, lcfg)
	leader := c.WaitLeader(0)

	client := c.Client()
	recorder := &recordingLegacy{Allocator: client}
	schain := newFakeSChain()
	cfg := RunConfig{
		Ranges: RangeKeys("bucket", 4), Workers: 4, Duration: 2 * legacyrafttest.WaitTimeout, Count: 3,
		Timeout: 2 * time.Second, HeartbeatInterval: 20 * time.Millisecond, Writes: WritePipelined,
	}
	r, err := NewRunner(Sides{Legacy: recorder, Written: client, SChain: schain}, cfg, runnerComparatorConfig())
	require.NoError(err)
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	done := make(chan Report, 1)
	go func() {
		rep, _ := r.Run(ctx)
		done <- rep
	}()

	c.Eventually(r.Ready, "gate opens before the kill")
	resetsBefore := r.Report().Decision.Resets
	c.Kill(leader)
	c.Eventually(func() bool {
		rep := r.Report()
		return rep.Counts[KindLegacyReissue] > 0 && rep.Decision.Resets > resetsBefore && rep.Decision.Ready
	}, "reissue reported, gate reset and reopened")
	cancel()
	rep := <-done

	require.Positive(rep.Counts[KindLegacyReissue])
	require.Equal(ClassLegacyDefect, rep.Examples[KindLegacyReissue][0].Class)
	require.Zero(rep.ByClass[ClassSChainViolation], "the fake S-Chain never reissues")
	require.Zero(rep.Counts[KindLegacyDuplicate])
	require.Greater(rep.Decision.Resets, resetsBefore)
	require.True(rep.Decision.Ready, "reasons: %v", rep.Decision.Reasons)
	require.Positive(rep.Run.Heartbeats)

	// Cutover: a fresh S-Chain started at the global floor never hands out
	// an id the legacy issued, reissued ones included.
	floors := r.Floors(10)
	issued := recorder.results()
	cutover := newFakeSChain()
	for _, key := range cfg.Ranges {
		for range 20 {
			res, err := cutover.Allocate(runCtx(t), key, cfg.Count, floors.Global)
			require.NoError(err)
			for _, l := range issued {
				require.False(res.Base < l.End() && l.First < res.End(),
					"S-Chain [%d,%d) overlaps legacy [%d,%d) term %d", res.Base, res.End(), l.First, l.End(), l.Term)
			}
		}
	}
}

func TestReplicatedLeaderKillHasNoReissue(t *testing.T) {
	require := require.New(t)
	lcfg := legacyrafttest.FastConfig()
	lcfg.Mode = legacyraft.ModeReplicated
	c := legacyrafttest.Start(t, 3, lcfg)
	leader := c.WaitLeader(0)

	ccfg := runnerComparatorConfig()
	ccfg.LegacySharedKeySpace = false // replicated counters are per range
	recorder := &recordingLegacy{Allocator: c.Client()}
	cfg := RunConfig{Ranges: RangeKeys("bucket", 4), Workers: 4, Duration: 2 * legacyrafttest.WaitTimeout, Count: 2, Timeout: 2 * time.Second}
	r, err := NewRunner(Sides{Legacy: recorder, SChain: newFakeSChain()}, cfg, ccfg)
	require.NoError(err)
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	done := make(chan Report, 1)
	go func() {
		rep, _ := r.Run(ctx)
		done <- rep
	}()

	c.Eventually(r.Ready, "gate opens before the kill")
	before := r.Report().Requests
	c.Kill(leader)
	c.WaitLeader(0)
	c.Eventually(func() bool {
		rep := r.Report()
		return rep.Requests > before+100 && rep.Decision.Ready
	}, "traffic continues on the new leader")
	cancel()
	rep := <-done

	require.Zero(rep.Counts[KindLegacyReissue])
	require.Zero(rep.Counts[KindLegacyDuplicate])
	require.Zero(rep.ByClass[ClassSChainViolation])
	terms := map[uint64]bool{}
	for _, res := range recorder.results() {
		terms[res.Term] = true
	}
	require.GreaterOrEqual(len(terms), 2, "allocations happened under both leaders")
}

func TestSlotsRunnerSurvivesDarkGroup(t *testing.T) {
	require := require.New(t)
	lcfg := legacyrafttest.FastConfig()
	lcfg.Mode, lcfg.Groups = legacyraft.ModeSlots, 2
	c := legacyrafttest.Start(t, 3, lcfg)
	c.WaitLeader(0)
	c.WaitLeader(1)
	node := c.Node(0)
	keys := RangeKeys("bucket", 8)
	var lit, dark []string
	for _, k := range keys {
		if g, _ := node.GroupOf(k); g == 0 {
			lit = append(lit, k)
		} else {
			dark = append(dark, k)
		}
	}
	require.NotEmpty(lit)
	require.NotEmpty(dark)
	c.IsolateGroup(1)
	c.WaitNoLeader(1)

	ccfg := runnerComparatorConfig()
	ccfg.LegacySharedKeySpace = false
	recorder := &recordingLegacy{Allocator: c.Client()}
	cfg := RunConfig{Ranges: keys, Workers: 4, Requests: 200, Count: 1, Timeout: time.Second}
	r, err := NewRunner(Sides{Legacy: recorder, SChain: newFakeSChain()}, cfg, ccfg)
	require.NoError(err)
	rep, err := r.Run(runCtx(t))
	require.NoError(err)

	require.NotEmpty(recorder.results())
	for _, f := range rep.Examples[KindOutcomeMismatch] {
		require.Contains(dark, f.Range, "only the dark group's ranges fail")
	}
	// Every request for the dark group fails (no fallback to group 0); the
	// lit group keeps serving.
	darkShare := uint64(200) * uint64(len(dark)) / uint64(len(keys))
	require.GreaterOrEqual(rep.Counts[KindOutcomeMismatch], darkShare)
	require.Less(rep.Counts[KindOutcomeMismatch], rep.Requests, "the lit group served")
	require.Zero(rep.ByClass[ClassSChainViolation])
}

// quittingSChain answers after a short delay, but, like the S-Chain client,
// gives up at once with an error wrapping context.DeadlineExceeded when its
// deadline comes before it could answer, before the context itself expires.
type quittingSChain struct{ *fakeSChain }

func (q quittingSChain) Allocate(ctx context.Context, rangeKey string, count, floor uint64) (SChainResult, error) {
	const work = 20 * time.Millisecond
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < work {
		return SChainResult{}, fmt.Errorf("%w: deadline comes before the next retry; last error: transaction tx still pending", context.DeadlineExceeded)
	}
	t := time.NewTimer(work)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return SChainResult{}, ctx.Err()
	case <-t.C:
	}
	return q.fakeSChain.Allocate(ctx, rangeKey, count, floor)
}

// TestRunnerEndIsNotADisagreement: requests still in flight when the run's
// duration runs out are the runner's doing, not S-Chain's: they are counted
// as abandoned, never observed, and the gate stays READY.
func TestRunnerEndIsNotADisagreement(t *testing.T) {
	require := require.New(t)
	cfg := RunConfig{Ranges: RangeKeys("bucket", 8), Workers: 8, Duration: 400 * time.Millisecond, Count: 1, Timeout: 10 * time.Second}
	ccfg := runnerComparatorConfig()
	ccfg.Gate.MinRequests = 10
	r, err := NewRunner(Sides{Legacy: &counterLegacy{}, SChain: quittingSChain{newFakeSChain()}}, cfg, ccfg)
	require.NoError(err)
	rep, err := r.Run(runCtx(t))
	require.NoError(err)
	require.Positive(rep.Requests)
	require.Empty(rep.Counts, "findings: %v", rep.Examples)
	require.True(rep.Decision.Ready, "reasons: %v", rep.Decision.Reasons)
	require.Positive(rep.Run.Abandoned, "the workers in flight at the end were cut")
}

// TestRunnerRequestTimeoutIsMissing: a side that gives up because its own
// request Timeout comes first is missing (a disagreement), not abandoned.
func TestRunnerRequestTimeoutIsMissing(t *testing.T) {
	require := require.New(t)
	cfg := RunConfig{Ranges: RangeKeys("bucket", 1), Workers: 1, Requests: 5, Count: 1, Timeout: 10 * time.Millisecond}
	r, err := NewRunner(Sides{Legacy: &counterLegacy{}, SChain: quittingSChain{newFakeSChain()}}, cfg, runnerComparatorConfig())
	require.NoError(err)
	rep, err := r.Run(runCtx(t))
	require.NoError(err)
	require.Equal(uint64(5), rep.Counts[KindMissing])
	require.Zero(rep.Counts[KindOutcomeMismatch])
	require.Zero(rep.Run.Abandoned)
}

// fixedLegacy issues the same result to every request.
type fixedLegacy struct{ res legacy.Result }

func (f fixedLegacy) Allocate(context.Context, string, uint64) (legacy.Result, error) {
	return f.res, nil
}

// endingSChain ends the run while S-Chain's answer is outstanding.
type endingSChain struct{ end context.CancelFunc }

func (s endingSChain) Allocate(ctx context.Context, _ string, _, _ uint64) (SChainResult, error) {
	s.end()
	<-ctx.Done()
	return SChainResult{}, ctx.Err()
}

// TestCutExchangeStillRaisesTheFloors: an exchange the run's end cuts off
// is no evidence, but ids the legacy issued in it were issued: the cutover
// floors must stay above them, or S-Chain would hand them out again.
func TestCutExchangeStillRaisesTheFloors(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	issued := legacy.Result{First: 3013, Count: 3, Term: 3}
	cfg := RunConfig{Ranges: RangeKeys("bucket", 1), Workers: 1, Duration: time.Minute, Count: 3, Timeout: time.Second}
	r, err := NewRunner(Sides{Legacy: fixedLegacy{issued}, SChain: endingSChain{cancel}}, cfg, runnerComparatorConfig())
	require.NoError(err)
	r.exchange(ctx, 1, 0)
	require.Equal(uint64(1), r.abandoned.Load(), "the exchange was cut off")
	floors := r.Floors(0)
	require.Greater(floors.Global, issued.End()-1, "the global floor is above what the legacy issued")
	require.Greater(floors.For(cfg.Ranges[0]), issued.End()-1, "the range's floor too")
}
