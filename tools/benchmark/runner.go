package benchmark

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// progressEvery is how often a running phase prints a progress line.
const progressEvery = 10 * time.Second

var (
	errBadSettings = errors.New("invalid bench settings")
	errNotReady    = errors.New("system never answered the warm-up")
)

// Settings is the workload every system gets. Start from DefaultSettings.
type Settings struct {
	// Ranges is the number of range keys, named <RangePrefix>-<n>.
	Ranges      int    `json:"ranges"`
	RangePrefix string `json:"range_prefix"`
	// Clients is the number of closed-loop clients of the steady rounds.
	Clients int `json:"clients"`
	// Count is the ids asked for per request.
	Count uint64 `json:"count"`
	// Rounds steady rounds of RoundDuration run per system, interleaved.
	Rounds        int           `json:"rounds"`
	RoundDuration time.Duration `json:"round_duration_ns"`
	// RequestTimeout bounds one request.
	RequestTimeout time.Duration `json:"request_timeout_ns"`
	// Failover runs the kill -9 phase after the steady rounds.
	Failover bool `json:"failover"`
	// FailoverBefore is the load before the kill (each Target says how
	// long the phase continues after it).
	FailoverBefore time.Duration `json:"failover_before_ns"`
	// StallFloor is the smallest stall threshold (see StallThreshold).
	StallFloor time.Duration `json:"stall_floor_ns"`
	// WarmUpTimeout bounds the warm-up: one allocation per range and
	// system before the first round (S-Chain opens its first membership then).
	WarmUpTimeout time.Duration `json:"warm_up_timeout_ns"`
}

// DefaultSettings fit `make bench` in its time budget on 2 cores.
func DefaultSettings() Settings {
	return Settings{
		Ranges: 32, RangePrefix: "bench", Clients: 64, Count: 4,
		Rounds: 4, RoundDuration: 10 * time.Second, RequestTimeout: 10 * time.Second,
		Failover: true, FailoverBefore: 5 * time.Second, StallFloor: time.Second,
		WarmUpTimeout: 2 * time.Minute,
	}
}

// Verify checks every field.
func (s Settings) Verify() error {
	switch {
	case s.Ranges < 1 || s.Clients < 1 || s.Count < 1 || s.Rounds < 1:
		return fmt.Errorf("%w: ranges, clients, count and rounds must be at least 1 (got %d, %d, %d, %d)", errBadSettings, s.Ranges, s.Clients, s.Count, s.Rounds)
	case s.RoundDuration <= 0 || s.RequestTimeout <= 0 || s.FailoverBefore <= 0 || s.StallFloor <= 0 || s.WarmUpTimeout <= 0:
		return fmt.Errorf("%w: durations must be positive", errBadSettings)
	case s.RangePrefix == "":
		return fmt.Errorf("%w: empty range prefix", errBadSettings)
	}
	return nil
}

// RangeKeys are the range keys of the workload, in index order.
func (s Settings) RangeKeys() []string {
	out := make([]string, s.Ranges)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", s.RangePrefix, i)
	}
	return out
}

// Runner runs the bench over a set of started targets.
type Runner struct {
	settings Settings
	targets  []Target
	ranges   []string
	progress io.Writer
	began    time.Time
	// all holds every sample of each target, for the duplicate check.
	all [][]Sample
}

// NewRunner checks settings; progress receives one line per phase.
func NewRunner(s Settings, targets []Target, progress io.Writer) (*Runner, error) {
	if err := s.Verify(); err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no systems", errBadSettings)
	}
	if progress == nil {
		progress = io.Discard
	}
	return &Runner{settings: s, targets: targets, ranges: s.RangeKeys(), progress: progress, all: make([][]Sample, len(targets))}, nil
}

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.progress, "[%6s] "+format+"\n", append([]any{time.Since(r.began).Round(time.Second)}, args...)...)
}

// Run warms every target up, runs the interleaved steady rounds, then the
// failover phase of each target (when enabled), and reports. The targets
// stay running; the caller stops them.
func (r *Runner) Run(ctx context.Context) (*Report, error) {
	r.began = time.Now()
	rep := &Report{Started: r.began, Settings: r.settings, Order: Schedule(len(r.targets), r.settings.Rounds)}
	watchers := r.watchMemberships(ctx)
	defer func() {
		for _, w := range watchers {
			if w != nil {
				w.Stop()
			}
		}
	}()
	rep.Systems = make([]SystemReport, len(r.targets))
	for i, t := range r.targets {
		rep.Systems[i] = SystemReport{Name: t.Name, SChain: t.SChain, SharedKeySpace: t.SharedKeySpace, BaselineOf: t.Baseline}
		if err := r.warmUp(ctx, i); err != nil {
			return nil, err
		}
	}
	r.steady(ctx, rep)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.settings.Failover {
		for i, t := range r.targets {
			if t.FailoverAfter <= 0 {
				continue
			}
			f, err := r.failover(ctx, i, StallThreshold(rep.Systems[i].Steady.P99, r.settings.StallFloor))
			if err != nil {
				return nil, fmt.Errorf("failover of %s: %w", t.Name, err)
			}
			rep.Systems[i].Failover = f
		}
	}
	r.countFlaps(rep, watchers)
	for i, t := range r.targets {
		samples := r.all[i]
		for j, u := range r.targets {
			if j != i && t.Network != "" && u.Network == t.Network {
				samples = append(slices.Clone(samples), r.all[j]...)
			}
		}
		rep.Systems[i].Duplicates = FindDuplicates(Intervals(samples, t.SharedKeySpace))
	}
	rep.WallTime = time.Since(r.began)
	return rep, nil
}

// watchMemberships starts one membership watcher per network (targets of
// one Network share it), indexed by target.
func (r *Runner) watchMemberships(ctx context.Context) []*MembershipWatcher {
	out := make([]*MembershipWatcher, len(r.targets))
	byNetwork := map[string]*MembershipWatcher{}
	for i, t := range r.targets {
		if t.Membership == nil {
			continue
		}
		if w, ok := byNetwork[t.Network]; ok && t.Network != "" {
			out[i] = w
			continue
		}
		name := t.NodeName
		if name == nil {
			name = func(id string) string { return id }
		}
		out[i] = WatchMembership(ctx, t.Membership, name)
		byNetwork[t.Network] = out[i]
	}
	return out
}

// countFlaps stops the watchers and fills each watched system's flaps: in
// its steady rounds, and after its kill.
func (r *Runner) countFlaps(rep *Report, watchers []*MembershipWatcher) {
	samples := map[*MembershipWatcher][]MembershipSample{}
	for _, w := range watchers {
		if _, ok := samples[w]; w != nil && !ok {
			samples[w] = w.Stop()
		}
	}
	for i, w := range watchers {
		if w == nil {
			continue
		}
		sys := &rep.Systems[i]
		f := CountFlapsIn(samples[w], sys.Windows)
		sys.Flaps = &f
		if fo := sys.Failover; fo != nil {
			after := CountFlaps(samples[w], fo.Victim, fo.KilledAt, fo.KilledAt, fo.EndedAt)
			fo.Flaps = &after
		}
	}
}

// steady runs the interleaved steady rounds of rep.Order and fills each
// system's rounds, pooled summary and medians; it stops early if ctx ends.
func (r *Runner) steady(ctx context.Context, rep *Report) {
	samples := make([][]Sample, len(r.targets))
	elapsed := make([]time.Duration, len(r.targets))
	finality := make([]FinalityCounts, len(r.targets))
	finalityFor := make([]time.Duration, len(r.targets))
	cpu := make([]CPUUse, len(r.targets))
	cpuRounds := make([]int, len(r.targets))
	for k, slot := range rep.Order {
		t := r.targets[slot.System]
		r.logf("round %d/%d (%d of %d): %s for %s", slot.Round+1, r.settings.Rounds, k+1, len(rep.Order), t.Name, r.settings.RoundDuration)
		from := time.Now()
		before, readBefore := r.readFinality(ctx, t)
		cpuBefore, readCPU := r.readCPU(ctx, t)
		d := Start(ctx, Load{System: t.Cluster, Ranges: r.ranges, Clients: r.settings.Clients, Pick: RoundRobin(len(r.ranges)), Count: r.settings.Count, Timeout: r.settings.RequestTimeout})
		err := wait(ctx, r.settings.RoundDuration, nil)
		got, took := d.Stop()
		cpuAfter, readCPU := r.readCPUAfter(ctx, t, readCPU)
		if readBefore {
			if after, ok := r.readFinality(ctx, t); ok {
				finality[slot.System] = finality[slot.System].Add(after.Sub(before))
				finalityFor[slot.System] += took
			}
		}
		rep.Systems[slot.System].Windows = append(rep.Systems[slot.System].Windows, Window{From: from, To: time.Now()})
		if err != nil {
			return
		}
		sum := Summarize(got, took)
		if readCPU {
			u := &cpu[slot.System]
			u.Used, u.Wall, u.Requests = u.Used+cpuAfter.Used-cpuBefore.Used, u.Wall+took, u.Requests+int(sum.Requests)
			u.Blocks += cpuAfter.Height - min(cpuBefore.Height, cpuAfter.Height)
			u.Txs += cpuAfter.Txs - min(cpuBefore.Txs, cpuAfter.Txs)
			if cpuAfter.Decided > cpuBefore.Decided && cpuAfter.Consensus >= cpuBefore.Consensus {
				u.Consensus += cpuAfter.Consensus - cpuBefore.Consensus
				u.Decided += cpuAfter.Decided - cpuBefore.Decided
			}
			cpuRounds[slot.System]++
		}
		r.logf("   %s: %s req/s, %s ids/s, p50 %s, p99 %s, %d failed", t.Name, Thousands(sum.ReqPerSec), Thousands(sum.IDsPerSec), Duration(sum.P50), Duration(sum.P99), sum.Failures)
		sys := &rep.Systems[slot.System]
		sys.Rounds = append(sys.Rounds, sum)
		for _, x := range got {
			if x.End <= took { // pooled rounds have no common time base
				samples[slot.System] = append(samples[slot.System], x)
			}
		}
		elapsed[slot.System] += took
		r.all[slot.System] = append(r.all[slot.System], got...)
	}
	for i := range rep.Systems {
		sys := &rep.Systems[i]
		sys.Steady = Summarize(samples[i], elapsed[i])
		var rps, ips []float64
		for _, rd := range sys.Rounds {
			rps, ips = append(rps, rd.ReqPerSec), append(ips, rd.IDsPerSec)
		}
		sys.MedianReqPerSec, sys.MedianIDsPerSec = Median(rps), Median(ips)
		if finalityFor[i] > 0 {
			sys.Finality = NewFinality(finality[i], finalityFor[i])
		}
		if cpuRounds[i] > 0 {
			u := cpu[i]
			sys.CPU = &u
		}
	}
}

// readFinality reads t's finality counters, if it has them; a failed read
// is logged and leaves the round out of the finality figures.
func (r *Runner) readFinality(ctx context.Context, t Target) (FinalityCounts, bool) {
	if t.Finality == nil {
		return FinalityCounts{}, false
	}
	c, err := t.Finality.FinalityCounts(ctx)
	if err != nil {
		r.logf("   %s: finality not read: %v", t.Name, err)
		return FinalityCounts{}, false
	}
	return c, true
}

// readCPU reads t's CPU time, if it has a source; a failed read is logged
// and leaves the round out of the CPU figures.
func (r *Runner) readCPU(ctx context.Context, t Target) (CPUReading, bool) {
	if t.CPU == nil {
		return CPUReading{}, false
	}
	got, err := t.CPU.CPUTime(ctx)
	if err != nil {
		r.logf("   %s: CPU time not read: %v", t.Name, err)
		return CPUReading{}, false
	}
	return got, true
}

// readCPUAfter reads t's CPU time at a round's end when the reading at its
// start succeeded.
func (r *Runner) readCPUAfter(ctx context.Context, t Target, readBefore bool) (CPUReading, bool) {
	if !readBefore {
		return CPUReading{}, false
	}
	return r.readCPU(ctx, t)
}

// warmUp allocates once per range until each answers: connections open,
// owners resolved, S-Chain's first membership open.
func (r *Runner) warmUp(ctx context.Context, i int) error {
	t := r.targets[i]
	r.logf("warming up %s: one allocation per range", t.Name)
	wctx, cancel := context.WithTimeout(ctx, r.settings.WarmUpTimeout)
	defer cancel()
	began := time.Now()
	for k, rk := range r.ranges {
		for {
			rctx, rcancel := context.WithTimeout(wctx, r.settings.RequestTimeout)
			start := time.Since(began)
			first, n, err := t.Cluster.Allocate(rctx, rk, r.settings.Count)
			rcancel()
			if err == nil {
				r.all[i] = append(r.all[i], Sample{Range: k, Start: start, End: time.Since(began), First: first, Count: n})
				break
			}
			if wctx.Err() != nil {
				return fmt.Errorf("%w: %s, range %s: %w", errNotReady, t.Name, rk, err)
			}
			if err := wait(wctx, errorPause, nil); err != nil {
				return fmt.Errorf("%w: %s, range %s: %w", errNotReady, t.Name, rk, err)
			}
		}
	}
	return nil
}

// failover runs one target's kill -9 phase: per-range clients, the kill
// after FailoverBefore, measurement until FailoverAfter past the kill.
func (r *Runner) failover(ctx context.Context, i int, threshold time.Duration) (*FailoverReport, error) {
	t := r.targets[i]
	r.logf("failover %s: %d per-range clients, kill -9 after %s, then %s", t.Name, len(r.ranges), r.settings.FailoverBefore, t.FailoverAfter)
	d := Start(ctx, Load{System: t.Cluster, Ranges: r.ranges, Clients: len(r.ranges), Pick: PerRange(), Count: r.settings.Count, Timeout: r.settings.RequestTimeout})
	stop := func() { samples, _ := d.Stop(); r.all[i] = append(r.all[i], samples...) }
	if err := wait(ctx, r.settings.FailoverBefore, nil); err != nil {
		stop()
		return nil, err
	}
	owners, err := t.Cluster.Owners(ctx, r.ranges)
	if err != nil {
		stop()
		return nil, fmt.Errorf("owners before the kill: %w", err)
	}
	victim := BusiestNode(owners)
	killAt, killedAt := d.Since(), time.Now()
	if err := t.Cluster.Kill(ctx, victim); err != nil {
		stop()
		return nil, fmt.Errorf("kill %s: %w", victim, err)
	}
	r.logf("   ranges per owner before the kill: %s; killed %s at +%s", ownerCounts(owners), victim, Duration(killAt))
	err = wait(ctx, t.FailoverAfter, func() {
		r.logf("   %s: +%s after the kill, %d/%d ranges allocated in the last 2s", t.Name, Duration(d.Since()-killAt), d.Allocating(2*time.Second), len(r.ranges))
	})
	samples, end := d.Stop()
	r.all[i] = append(r.all[i], samples...)
	if err != nil {
		return nil, err
	}
	f := NewFailoverReport(victim, r.ranges, owners, samples, killAt, end, threshold)
	f.KilledAt, f.EndedAt = killedAt, killedAt.Add(end-killAt)
	r.logf("   %s: %d/%d ranges kept allocating; longest stall of the victim's ranges %s, of the others %s; global stall %s",
		t.Name, f.Kept, len(f.Ranges), stallText(f.LongestVictim), stallText(f.LongestOthers), stallText(f.Global))
	return f, nil
}

// ownerCounts lists how many ranges each owner serves ("a 3, b 5"), by
// name; ranges without a known owner count as "unknown".
func ownerCounts(owners []string) string {
	n := map[string]int{}
	for _, o := range owners {
		if o == "" {
			o = "unknown"
		}
		n[o]++
	}
	names := slices.Sorted(maps.Keys(n))
	parts := make([]string, len(names))
	for i, o := range names {
		parts[i] = fmt.Sprintf("%s %d", o, n[o])
	}
	return strings.Join(parts, ", ")
}

// wait returns after d, or ctx's error if it ends first; tick, if not nil,
// runs every progressEvery meanwhile.
func wait(ctx context.Context, d time.Duration, tick func()) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	every := time.NewTicker(progressEvery)
	defer every.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-every.C:
			if tick != nil {
				tick()
			}
		}
	}
}
