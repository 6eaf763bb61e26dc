// Package reservation hands out ids from reservations committed on chain:
// a pool per range holds the unissued rest of accepted reservations, cuts
// each request's ids from them in memory, and refills itself in the
// background before it runs dry, so that a steady stream of requests pays
// the consensus round trip once per reservation, off its path. An owner's
// node (vm/writer) and a SeaweedFS master (seaweedfs/schainseq) both serve
// ids this way.
//
// It is safe because a reservation is accepted state before any of its ids
// is handed out: nobody else can ever issue them. Ids the pool cannot use
// (the tail of a reservation too short for a request, ids below a request's
// bound, a pool lost with its process) are skipped, never reissued.
//
// It imports only the standard library and errcode, so that the SeaweedFS
// patch copies it (seaweedfs/patch).
package reservation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s-chain/schain/errcode"
)

var (
	// ErrRefill: the reservation that would refill the pool failed; the
	// request may be retried later.
	ErrRefill = errcode.New(errcode.NotReady, "pool_refill", "reservation: refilling the id pool failed")
	// ErrEmpty: no committed id was left for a request and none arrived in
	// time (its deadline, or a refill in flight longer than its deadline
	// with Config.FailFast).
	ErrEmpty = errcode.New(errcode.NotReady, "pool_empty", "reservation: no committed id left")
	// ErrCount: a request for no id, or for more than a reservation holds.
	ErrCount = errcode.New(errcode.InvalidParams, "pool_count", "reservation: a request takes 1 to Config.Max ids")
)

// Reservation is Count ids from Base committed on chain; Ref names it for
// the caller (the transaction and entry, say).
type Reservation[R any] struct {
	Base, Count uint64
	Ref         R
}

// Reserve commits a reservation of count ids, all at or above from, and
// returns once it is accepted (or fails).
type Reserve[R any] func(ctx context.Context, count, from uint64) (Reservation[R], error)

// Config sizes and bounds a pool.
type Config struct {
	// Min and Max bound one reservation; within them a refill asks for the
	// observed rate times Horizon (Min == Max: a fixed size). A refill
	// starts when less than half of that is left.
	Min, Max uint64
	Horizon  time.Duration
	// Timeout bounds one refill.
	Timeout time.Duration
	// RetryAfter: this long after a failed refill, a request that finds no
	// id fails with the refill's error instead of starting another, so an
	// unreachable chain costs each request nothing but the error.
	RetryAfter time.Duration
	// FailFast: a request whose whole deadline has already passed while
	// the refill in flight ran fails at once instead of waiting (a
	// SeaweedFS master's pick can try another volume meanwhile).
	FailFast bool
	// Go runs a refill in the background (nil: a goroutine), so that its
	// owner can wait for refills when it stops.
	Go func(func())
	// Logf, if set, reports failed refills.
	Logf func(format string, args ...any)
}

// Taken is a request's ids: Count from Base, cut from the reservation
// Ref; Waited if the request waited for a refill.
type Taken[R any] struct {
	Base, Count uint64
	Ref         R
	Waited      bool
}

// Stats are a pool's counters.
type Stats struct {
	// Taken ids were handed out, Skipped ids never will be.
	Taken   uint64 `json:"taken"`
	Skipped uint64 `json:"skipped"`
	// Refills succeeded, Failures did not; Waits are requests that waited
	// for a refill.
	Refills  uint64 `json:"refills"`
	Failures uint64 `json:"failures"`
	Waits    uint64 `json:"waits"`
	// FastFails are requests that failed without waiting (FailFast).
	FastFails uint64 `json:"fast_fails"`
	// Left are the ids the pool holds now.
	Left uint64 `json:"left"`
}

// Pool is one range's committed, not yet handed out ids. It is safe for
// concurrent use; at most one refill runs at a time.
type Pool[R any] struct {
	name       string
	reserve    Reserve[R]
	cfg        Config
	background context.Context // ends every refill when its owner stops

	mu        sync.Mutex // guards the fields below
	segs      []Reservation[R]
	left      uint64
	refill    chan struct{} // non-nil while a refill runs; closed when it ends
	refillAt  time.Time     // when the refill in flight started
	lastErr   error         // the last refill's error (nil: it succeeded)
	lastErrAt time.Time
	meter     rateMeter
	stats     Stats
}

// New returns the empty pool of the range name, refilled by reserve within
// background.
func New[R any](background context.Context, name string, reserve Reserve[R], cfg Config) *Pool[R] {
	if cfg.Go == nil {
		cfg.Go = func(f func()) { go f() }
	}
	cfg.Min = max(cfg.Min, 1)
	cfg.Max = max(cfg.Max, cfg.Min)
	return &Pool[R]{name: name, reserve: reserve, cfg: cfg, background: background}
}

// Take cuts count consecutive ids, all at or above from, waiting for a
// refill when the pool holds none, until ctx ends (or, with FailFast, not
// at all when the refill in flight already outlasted ctx's deadline).
func (p *Pool[R]) Take(ctx context.Context, count, from uint64) (Taken[R], error) {
	if count == 0 || count > p.cfg.Max {
		return Taken[R]{}, fmt.Errorf("%w: range %s: %d ids in one request, the most is %d", ErrCount, p.name, count, p.cfg.Max)
	}
	var budget time.Duration // what the request may wait, if bounded
	deadline, bounded := ctx.Deadline()
	if bounded {
		budget = time.Until(deadline)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	waited := false
	for {
		if out, ok := p.cut(count, from); ok {
			now := time.Now()
			p.stats.Taken += count
			p.meter.add(count, now)
			if target := p.target(count, now); p.refill == nil && p.left < target/2 {
				p.start(target, from)
			}
			out.Waited = waited
			return out, nil
		}
		if p.refill == nil && p.lastErr != nil && (waited || time.Since(p.lastErrAt) < p.cfg.RetryAfter) {
			return Taken[R]{}, p.lastErr // the refill this request waited for failed, or one did just now
		}
		if p.refill == nil {
			p.start(p.target(count, time.Now()), from)
		}
		if since := time.Since(p.refillAt); p.cfg.FailFast && bounded && !waited && since >= budget {
			p.stats.FastFails++
			return Taken[R]{}, fmt.Errorf("%w: range %s: a reservation is in flight for %v (the chain is slow or the range's owner down)", ErrEmpty, p.name, since.Round(time.Millisecond))
		}
		if !waited {
			p.stats.Waits++
			waited = true
		}
		done := p.refill
		p.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			p.mu.Lock()
			return Taken[R]{}, fmt.Errorf("%w: range %s: none committed in time (a reservation is in flight): %w", ErrEmpty, p.name, context.Cause(ctx))
		}
		p.mu.Lock()
	}
}

// Holds reports whether the pool holds count ids now, so that Take would
// answer from memory: a hint (another caller may take them first) for a
// caller that serves several requests in turn and must not make the others
// wait on one range's reservation.
func (p *Pool[R]) Holds(count uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.segs {
		if s.Count >= count {
			return true
		}
	}
	return false
}

// Refilling reports whether a refill is in flight.
func (p *Pool[R]) Refilling() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refill != nil
}

// Prime starts a refill of an empty, idle pool, so that its first request
// does not wait.
func (p *Pool[R]) Prime() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left == 0 && p.refill == nil {
		p.start(p.cfg.Min, 0)
	}
}

// Stats returns the counters and the ids left.
func (p *Pool[R]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.Left = p.left
	return st
}

// cut takes count consecutive ids at or above from off the head of the
// pool, skipping what cannot serve it: ids below the bound, and the tail of
// a reservation shorter than count.
func (p *Pool[R]) cut(count, from uint64) (Taken[R], bool) {
	for len(p.segs) > 0 {
		s := p.segs[0]
		switch {
		case s.Base < from:
			p.skip(min(s.Count, from-s.Base))
		case s.Count < count:
			p.skip(s.Count)
		default:
			p.advance(count)
			return Taken[R]{Base: s.Base, Count: count, Ref: s.Ref}, true
		}
	}
	return Taken[R]{}, false
}

// skip drops the next n ids unused.
func (p *Pool[R]) skip(n uint64) {
	p.stats.Skipped += n
	p.advance(n)
}

// advance consumes the head reservation's next n ids.
func (p *Pool[R]) advance(n uint64) {
	s := &p.segs[0]
	s.Base += n
	s.Count -= n
	p.left -= n
	if s.Count == 0 {
		p.segs = p.segs[1:]
	}
}

// target is how many ids a refill asks for: the rate times the horizon
// within [Min, Max], and at least the request's count.
func (p *Pool[R]) target(count uint64, now time.Time) uint64 {
	want := p.meter.rate(now) * p.cfg.Horizon.Seconds()
	n := p.cfg.Min
	switch {
	case want >= float64(p.cfg.Max):
		n = p.cfg.Max
	case want > float64(p.cfg.Min):
		n = uint64(want)
	}
	return max(n, count)
}

// start runs one refill of n ids at or above from; p.mu is held.
func (p *Pool[R]) start(n, from uint64) {
	done := make(chan struct{})
	p.refill, p.refillAt = done, time.Now()
	p.cfg.Go(func() {
		ctx, cancel := context.WithTimeout(p.background, p.cfg.Timeout)
		t0 := time.Now()
		res, err := p.reserve(ctx, n, from)
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case err == nil && res.Count > 0:
			p.segs = append(p.segs, res)
			p.left += res.Count
			p.stats.Refills++
			p.lastErr = nil
		default:
			if err == nil {
				err = errors.New("empty reservation")
			}
			p.stats.Failures++
			p.lastErr = fmt.Errorf("%w: range %s: reserving %d: %w", ErrRefill, p.name, n, err)
			p.lastErrAt = time.Now()
			if p.cfg.Logf != nil {
				p.cfg.Logf("reservation of %d ids of %s failed after %v: %v", n, p.name, time.Since(t0).Round(time.Millisecond), err)
			}
		}
		close(done)
		p.refill = nil
	})
}

// rateMeter estimates ids per second: an exponential average over
// one-second windows, or the current window's rate when that is higher (a
// surge shows at once).
type rateMeter struct {
	start  time.Time
	n      uint64
	perSec float64
}

func (m *rateMeter) add(n uint64, now time.Time) {
	if m.start.IsZero() {
		m.start = now
	}
	m.n += n
	if el := now.Sub(m.start); el >= time.Second {
		cur := float64(m.n) / el.Seconds()
		m.perSec = (m.perSec + cur) / 2
		m.start, m.n = now, 0
	}
}

func (m *rateMeter) rate(now time.Time) float64 {
	if el := now.Sub(m.start); el >= 100*time.Millisecond {
		return max(m.perSec, float64(m.n)/el.Seconds())
	}
	return m.perSec
}
