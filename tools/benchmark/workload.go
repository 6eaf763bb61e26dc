package benchmark

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// errorPause is how long a client waits after a failed request before the
// next one, so that a system failing fast does not turn the client into a
// busy loop that starves the machine the other systems share.
const errorPause = 50 * time.Millisecond

// Picker chooses the range of a client's next request.
type Picker func(client int) int

// RoundRobin spreads every client's requests over n ranges in turn, sharing
// one rotation: the steady workload.
func RoundRobin(n int) Picker {
	var next atomic.Uint64
	return func(int) int { return int((next.Add(1) - 1) % uint64(n)) }
}

// PerRange pins client i to range i: the failover workload, where a range
// whose owner died must not hold back clients of other ranges.
func PerRange() Picker { return func(client int) int { return client } }

// Load is a closed-loop workload: Clients goroutines, each sending its next
// request when the previous one ends.
type Load struct {
	System  System
	Ranges  []string
	Clients int
	Pick    Picker
	// Count is the ids asked for per request.
	Count uint64
	// Timeout bounds one request.
	Timeout time.Duration
}

// Driver runs a Load until stopped and records every request.
type Driver struct {
	load    Load
	began   time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	samples [][]Sample // one slice per client, owned by it until Stop
	// last holds, per range, the offset of its latest successful completion
	// (-1 before the first), for progress lines; lastStart the latest start
	// of a request that succeeded.
	last, lastStart []atomic.Int64
}

// Start begins the load; requests are issued until Stop or ctx ends.
func Start(ctx context.Context, l Load) *Driver {
	ctx, cancel := context.WithCancel(ctx)
	d := &Driver{load: l, began: time.Now(), cancel: cancel, samples: make([][]Sample, l.Clients),
		last: make([]atomic.Int64, len(l.Ranges)), lastStart: make([]atomic.Int64, len(l.Ranges))}
	for i := range d.last {
		d.last[i].Store(-1)
		d.lastStart[i].Store(-1)
	}
	for c := 0; c < l.Clients; c++ {
		d.wg.Add(1)
		go d.client(ctx, c)
	}
	return d
}

// Since is the offset of now from the driver's start, the time base of its
// samples.
func (d *Driver) Since() time.Duration { return time.Since(d.began) }

func (d *Driver) client(ctx context.Context, c int) {
	defer d.wg.Done()
	for ctx.Err() == nil {
		r := d.load.Pick(c)
		rctx, cancel := context.WithTimeout(ctx, d.load.Timeout)
		start := d.Since()
		first, n, err := d.load.System.Allocate(rctx, d.load.Ranges[r], d.load.Count)
		end := d.Since()
		cancel()
		stopped := ctx.Err() != nil
		if stopped && err != nil {
			return // cut by Stop: the failure belongs to no phase
		}
		// A success that ended after Stop is kept for the check of ids
		// issued twice; the summaries leave it out (it ended after elapsed).
		d.samples[c] = append(d.samples[c], Sample{Range: r, Start: start, End: end, First: first, Count: n, Failed: err != nil})
		if stopped {
			return
		}
		if err == nil {
			storeMax(&d.last[r], end)
			storeMax(&d.lastStart[r], start)
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(errorPause):
		}
	}
}

// Stop ends the load, waits for every client and returns the samples and
// the measured duration (start to Stop). Failures cut by Stop are dropped;
// successes that ended after it are kept (their End exceeds the duration).
func (d *Driver) Stop() ([]Sample, time.Duration) {
	elapsed := d.Since()
	d.cancel()
	d.wg.Wait()
	var out []Sample
	for _, s := range d.samples {
		out = append(out, s...)
	}
	return out, elapsed
}

// SucceededSince reports whether a request of range r that started at or
// after offset at succeeded. A request that started before at and ended
// after it does not count: what answered it may have been decided before
// at.
func (d *Driver) SucceededSince(r int, at time.Duration) bool {
	return time.Duration(d.lastStart[r].Load()) >= at
}

// storeMax raises v to t: clients of one range report out of order.
func storeMax(v *atomic.Int64, t time.Duration) {
	for {
		cur := v.Load()
		if int64(t) <= cur || v.CompareAndSwap(cur, int64(t)) {
			return
		}
	}
}

// Allocating counts the ranges with a successful completion in the last
// window (for progress lines).
func (d *Driver) Allocating(window time.Duration) int {
	now := d.Since()
	n := 0
	for i := range d.last {
		if t := d.last[i].Load(); t >= 0 && now-time.Duration(t) <= window {
			n++
		}
	}
	return n
}
