package shadow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var (
	errNoRanges  = errors.New("no ranges")
	errNoWorkers = errors.New("workers must be positive")
	errNoCount   = errors.New("count must be positive")
	errNoBound   = errors.New("set requests or duration")
	errNoTimeout = errors.New("timeout must be positive")
	errNoSide    = errors.New("both allocators are required")
)

// WriteModel says which legacy allocations the runner reports as written,
// the way volume servers report their max key in heartbeats.
type WriteModel string

const (
	// WriteNone reports nothing: a pure assign benchmark, as measured on the
	// real master. Every id is then reissuable.
	WriteNone WriteModel = "none"
	// WriteImmediate reports every allocation written at once.
	WriteImmediate WriteModel = "immediate"
	// WritePipelined reports a range's allocation written when the range's
	// next legacy allocation succeeds, modelling an upload that completes
	// while the next key is assigned. The newest allocation is always
	// unwritten, which is what a leader change loses.
	WritePipelined WriteModel = "pipelined"
)

// RunConfig shapes the traffic.
type RunConfig struct {
	// Ranges are the range keys, used round robin.
	Ranges []string `json:"ranges"`
	// Workers is the number of concurrent workers. Each range is served by
	// one worker at a time, so observations of a range stay in issue order.
	Workers int `json:"workers"`
	// Requests stops the run after this many requests (0: no limit).
	Requests uint64 `json:"requests"`
	// Duration stops the run after this long (0: no limit).
	Duration time.Duration `json:"duration"`
	// Count is the ids asked per request.
	Count uint64 `json:"count"`
	// Timeout bounds each side of each request; slower sides are missing.
	Timeout time.Duration `json:"timeout"`
	// HeartbeatInterval is how often written keys are reported to the
	// legacy allocator (0: never).
	HeartbeatInterval time.Duration `json:"heartbeat-interval"`
	// Writes selects which allocations count as written.
	Writes WriteModel `json:"writes"`
}

// Validate checks the configuration; NewRunner calls it.
func (c RunConfig) Validate() error {
	switch {
	case len(c.Ranges) == 0:
		return errNoRanges
	case c.Workers < 1:
		return errNoWorkers
	case c.Count == 0:
		return errNoCount
	case c.Requests == 0 && c.Duration <= 0:
		return errNoBound
	case c.Timeout <= 0:
		return errNoTimeout
	}
	return nil
}

// RunStats are the runner's own counters.
type RunStats struct {
	Started         time.Time     `json:"started"`
	ElapsedNS       time.Duration `json:"elapsed_ns"`
	Heartbeats      uint64        `json:"heartbeats"`
	HeartbeatErrors uint64        `json:"heartbeat_errors"`
	// Abandoned counts exchanges the runner itself cut at the end of the
	// run (its deadline or cancellation); they are not observed.
	Abandoned uint64 `json:"abandoned"`
}

// Sides are the allocators a Runner drives.
type Sides struct {
	Legacy legacy.Allocator
	// Written receives heartbeats of written keys; nil disables them.
	Written legacy.WriteReporter
	SChain  SChain
	// Floor returns the floor passed to SChain.Allocate; nil means 0. After
	// cutover it is Floors.For.
	Floor func(rangeKey string) uint64
	// Now is the clock; nil means time.Now. It is read only here, at the
	// edge, never inside the comparator.
	Now func() time.Time
}

// Runner drives both allocators with the same traffic and feeds the
// comparator. Run may be called once; Report and Floors are safe to call
// concurrently with it.
type Runner struct {
	cfg   RunConfig
	sides Sides

	mu      sync.Mutex // guards comp and started
	comp    *Comparator
	started time.Time

	rangeLocks []sync.Mutex    // serialise each range
	written    []atomic.Uint64 // max written id per range, 0: none
	pending    []uint64        // WritePipelined: guarded by rangeLocks[i]

	seq             atomic.Uint64
	heartbeats      atomic.Uint64
	heartbeatErrors atomic.Uint64
	abandoned       atomic.Uint64
}

// NewRunner validates both configurations and returns a runner.
func NewRunner(sides Sides, cfg RunConfig, comparator Config) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid run config: %w", err)
	}
	if sides.Legacy == nil || sides.SChain == nil {
		return nil, errNoSide
	}
	comp, err := NewComparator(comparator)
	if err != nil {
		return nil, err
	}
	if sides.Now == nil {
		sides.Now = time.Now
	}
	if sides.Floor == nil {
		sides.Floor = func(string) uint64 { return 0 }
	}
	return &Runner{
		cfg: cfg, sides: sides, comp: comp,
		rangeLocks: make([]sync.Mutex, len(cfg.Ranges)),
		written:    make([]atomic.Uint64, len(cfg.Ranges)),
		pending:    make([]uint64, len(cfg.Ranges)),
	}, nil
}

// Run drives the traffic until Requests or Duration is reached or ctx is
// cancelled, and returns the final report. Cancellation is not an error:
// the report covers what was observed.
func (r *Runner) Run(ctx context.Context) (Report, error) {
	r.mu.Lock()
	r.started = r.sides.Now()
	r.mu.Unlock()
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.cfg.Duration)
		defer cancel()
	}
	var wg sync.WaitGroup
	hbCtx, stopHeartbeats := context.WithCancel(ctx)
	if r.sides.Written != nil && r.cfg.HeartbeatInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.heartbeatLoop(hbCtx)
		}()
	}
	var workers sync.WaitGroup
	for range r.cfg.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			r.work(ctx)
		}()
	}
	workers.Wait()
	stopHeartbeats()
	wg.Wait()
	return r.Report(), nil
}

// Report snapshots the comparator's report with the runner's counters.
func (r *Runner) Report() Report {
	r.mu.Lock()
	rep := r.comp.Report()
	started := r.started
	r.mu.Unlock()
	rep.Run = &RunStats{
		Started: started, Heartbeats: r.heartbeats.Load(), HeartbeatErrors: r.heartbeatErrors.Load(),
		Abandoned: r.abandoned.Load(),
	}
	if !started.IsZero() {
		rep.Run.ElapsedNS = r.sides.Now().Sub(started)
	}
	return rep
}

// Floors returns the cutover floors observed so far.
func (r *Runner) Floors(margin uint64) Floors {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.comp.Floors(margin)
}

// Ready reports the gate decision so far.
func (r *Runner) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.comp.Ready()
}

func (r *Runner) work(ctx context.Context) {
	for ctx.Err() == nil {
		seq := r.seq.Add(1)
		if r.cfg.Requests > 0 && seq > r.cfg.Requests {
			return
		}
		i := int((seq - 1) % uint64(len(r.cfg.Ranges)))
		r.rangeLocks[i].Lock()
		r.exchange(ctx, seq, i)
		r.rangeLocks[i].Unlock()
	}
}

// exchange runs one request against both sides and feeds the comparator,
// holding the range's lock so the range's observations stay in issue order.
func (r *Runner) exchange(ctx context.Context, seq uint64, i int) {
	req := Request{Seq: seq, Range: r.cfg.Ranges[i], Count: r.cfg.Count}
	obs := Observation{Request: req}

	lctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	start, wall := r.sides.Now(), time.Now()
	obs.Legacy.Result, obs.Legacy.Err = r.sides.Legacy.Allocate(lctx, req.Range, req.Count)
	obs.Legacy.Latency = r.sides.Now().Sub(start)
	obs.Legacy.Missing = timedOut(lctx, obs.Legacy.Err)
	cancel()
	cut := r.cutByRun(ctx, wall, obs.Legacy.Err)

	sctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	start, wall = r.sides.Now(), time.Now()
	obs.SChain.Result, obs.SChain.Err = r.sides.SChain.Allocate(sctx, req.Range, req.Count, r.sides.Floor(req.Range))
	obs.SChain.Latency = r.sides.Now().Sub(start)
	obs.SChain.Missing = timedOut(sctx, obs.SChain.Err)
	cancel()
	cut = cut || r.cutByRun(ctx, wall, obs.SChain.Err)

	if cut {
		// The run is ending; an exchange it cut off is not evidence, but
		// what the legacy issued in it bounds the floors all the same.
		r.abandoned.Add(1)
		if obs.Legacy.ok() {
			r.mu.Lock()
			r.comp.Issued(req.Range, obs.Legacy.Result)
			r.mu.Unlock()
		}
		return
	}
	obs.At = r.sides.Now()
	r.mu.Lock()
	r.comp.Observe(obs)
	r.mu.Unlock()
	if obs.Legacy.ok() {
		r.markWritten(i, obs.Legacy.Result)
	}
}

// timedOut reports whether a side failed for want of time: its context
// expired, or it gave up because its deadline would pass before its next
// retry (what the S-Chain client does).
func timedOut(ctx context.Context, err error) bool {
	return err != nil && (errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded))
}

// cutByRun reports whether a side that started at wall (wall clock) failed
// because the run ended: the run's context is done, or the side gave up for
// want of time while the run's deadline, not the request's own Timeout, was
// the nearer bound.
func (r *Runner) cutByRun(run context.Context, wall time.Time, err error) bool {
	if err == nil {
		return false
	}
	if run.Err() != nil {
		return true
	}
	deadline, ok := run.Deadline()
	timeUp := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	return ok && timeUp && deadline.Before(wall.Add(r.cfg.Timeout))
}

// markWritten applies the write model; the caller holds range i's lock.
func (r *Runner) markWritten(i int, res legacy.Result) {
	last := res.End() - 1
	switch r.cfg.Writes {
	case WriteImmediate:
		r.raiseWritten(i, last)
	case WritePipelined:
		if r.pending[i] > 0 {
			r.raiseWritten(i, r.pending[i])
		}
		r.pending[i] = last
	}
}

func (r *Runner) raiseWritten(i int, id uint64) {
	for {
		cur := r.written[i].Load()
		if id <= cur || r.written[i].CompareAndSwap(cur, id) {
			return
		}
	}
}

// heartbeatLoop reports every range's max written id each interval, like
// volume servers heartbeating whichever master currently leads.
func (r *Runner) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i, key := range r.cfg.Ranges {
			maxWritten := r.written[i].Load()
			if maxWritten == 0 {
				continue
			}
			hctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
			err := r.sides.Written.ReportWritten(hctx, key, maxWritten)
			cancel()
			r.heartbeats.Add(1)
			if err != nil {
				r.heartbeatErrors.Add(1)
			}
		}
	}
}

// RangeKeys returns n range keys prefix-0 .. prefix-(n-1), the usual traffic
// shape for RunConfig.Ranges.
func RangeKeys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}
