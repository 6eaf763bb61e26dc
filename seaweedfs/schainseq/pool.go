package schainseq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrNoKeys: no committed id was left for a request and none arrived within
// the bound. It wraps the reason (the reservation's error, or its wait).
var ErrNoKeys = errors.New("no committed S-Chain ids")

// reserveFunc reserves count ids of one range, all above `above`.
type reserveFunc func(ctx context.Context, count, above uint64) (Reservation, error)

// sizing decides how many ids a refill asks for: the range's rate times
// horizon, clamped to [min, max]. A fixed size has min == max.
type sizing struct {
	min, max uint64
	horizon  time.Duration
}

func (s sizing) target(perSec float64) uint64 {
	want := perSec * s.horizon.Seconds()
	switch {
	case want <= float64(s.min):
		return s.min
	case want >= float64(s.max):
		return s.max
	}
	return uint64(want)
}

// pool hands out the ids of one range from committed reservations and
// refills itself in the background before it runs dry. It never hands out
// an id that is not part of an accepted reservation; ids it cannot use (the
// tail of a reservation too short for a request, ids at or below a request's
// bound, a reservation abandoned with its master) are skipped, never
// reissued.
//
// At most one refill runs at a time. A request finding the pool empty waits
// for the refill in flight (starting one if none is), at most its bound;
// when the refill has already been in flight that long, or failed less than
// retryAfter ago, the request fails at once instead, so that a slow or
// unreachable S-Chain (or a dead owner) costs the master's assign loop
// nothing but the error, and its next pick can land on another volume.
type pool struct {
	rng        string
	reserve    reserveFunc
	size       sizing
	timeout    time.Duration   // bound of one refill
	retryAfter time.Duration   // fail fast this long after a failed refill
	background context.Context // cancelled when the sequencer stops
	logf       func(format string, args ...any)

	// The fields below are guarded by mu (the sequencer's pools each have
	// their own).
	mu        sync.Mutex
	segs      []Reservation // unused committed ids; segs[0].Base is the next
	left      uint64        // ids in segs
	refill    chan struct{} // non-nil while a refill runs; closed when it ends
	refillAt  time.Time     // when the refill in flight started
	lastErr   error
	lastErrAt time.Time
	meter     rateMeter
	stats     poolStats
}

// poolStats are a pool's counters.
type poolStats struct {
	Taken    uint64 `json:"taken"`
	Skipped  uint64 `json:"skipped"`
	Refills  uint64 `json:"refills"`
	Failures uint64 `json:"failures"`
	Waits    uint64 `json:"waits"`
	// FastFails are requests that found no id while a reservation had been
	// in flight longer than their bound, and failed without waiting.
	FastFails uint64 `json:"fast_fails"`
}

func newPool(background context.Context, rng string, reserve reserveFunc, size sizing, timeout time.Duration, logf func(string, ...any)) *pool {
	return &pool{
		rng: rng, reserve: reserve, size: size, timeout: timeout, retryAfter: time.Second,
		background: background, logf: logf,
	}
}

// take cuts count consecutive ids, all above `above`, waiting at most wait
// for a refill when the pool has none.
func (p *pool) take(count, above uint64, wait time.Duration) (uint64, error) {
	if count == 0 || count > p.size.max {
		return 0, fmt.Errorf("%w: range %s: %d ids in one request, the most is %d", ErrNoKeys, p.rng, count, p.size.max)
	}
	deadline := time.Now().Add(wait)
	p.mu.Lock()
	defer p.mu.Unlock()
	waited := false
	for {
		if base, ok := p.cut(count, above); ok {
			now := time.Now()
			p.stats.Taken += count
			p.meter.add(count, now)
			p.topUp(count, above, now)
			return base, nil
		}
		if p.refill == nil {
			if p.lastErr != nil && time.Since(p.lastErrAt) < p.retryAfter {
				return 0, p.lastErr
			}
			p.start(max(p.size.target(p.meter.rate(time.Now())), count), above)
		}
		if since := time.Since(p.refillAt); !waited && since >= wait {
			// A request already waited this long for the reservation in
			// flight: waiting again would only hold the master's pick,
			// which can try another volume instead.
			p.stats.FastFails++
			return 0, fmt.Errorf("%w: range %s: a reservation is in flight for %v (S-Chain slow or the range's owner down)", ErrNoKeys, p.rng, since.Round(time.Millisecond))
		}
		if !waited {
			p.stats.Waits++
			waited = true
		}
		done := p.refill
		left := time.Until(deadline)
		if left <= 0 {
			return 0, fmt.Errorf("%w: range %s: none committed within %v (a reservation is in flight)", ErrNoKeys, p.rng, wait)
		}
		p.mu.Unlock()
		t := time.NewTimer(left)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
		p.mu.Lock()
	}
}

// cut takes count consecutive ids above `above` from the head of the pool,
// skipping what cannot serve it: ids at or below the bound, and the tail of
// a reservation shorter than count.
func (p *pool) cut(count, above uint64) (uint64, bool) {
	for len(p.segs) > 0 {
		s := p.segs[0]
		switch {
		case s.Base <= above:
			p.skip(min(s.Count, above+1-s.Base))
		case s.Count < count:
			p.skip(s.Count)
		default:
			p.advance(count)
			return s.Base, true
		}
	}
	return 0, false
}

// skip drops the next n ids unused.
func (p *pool) skip(n uint64) {
	p.stats.Skipped += n
	p.advance(n)
}

// advance consumes the head segment's next n ids.
func (p *pool) advance(n uint64) {
	s := &p.segs[0]
	s.Base += n
	s.Count -= n
	p.left -= n
	if s.Count == 0 {
		p.segs = p.segs[1:]
	}
}

// topUp starts a refill when less than half the target is left.
func (p *pool) topUp(count, above uint64, now time.Time) {
	target := max(p.size.target(p.meter.rate(now)), count)
	if p.refill == nil && p.left < target/2 {
		p.start(target, above)
	}
}

// prime starts a refill of an empty, idle pool: a new volume gets its keys
// before its first assign.
func (p *pool) prime() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left == 0 && p.refill == nil {
		p.start(p.size.min, 0)
	}
}

// start runs one refill of n ids in the background; mu is held.
func (p *pool) start(n, above uint64) {
	done := make(chan struct{})
	p.refill, p.refillAt = done, time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(p.background, p.timeout)
		t0 := time.Now()
		res, err := p.reserve(ctx, n, above)
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		if err == nil && res.Count > 0 {
			p.segs = append(p.segs, res)
			p.left += res.Count
			p.stats.Refills++
			p.lastErr = nil
		} else {
			if err == nil {
				err = errors.New("empty reservation")
			}
			p.stats.Failures++
			p.lastErr = fmt.Errorf("%w: range %s: reserving %d: %w", ErrNoKeys, p.rng, n, err)
			p.lastErrAt = time.Now()
			p.logf("reservation of %d ids of %s failed after %v: %v", n, p.rng, time.Since(t0).Round(time.Millisecond), err)
		}
		close(done)
		p.refill = nil
	}()
}

// snapshot returns the counters and the ids left.
func (p *pool) snapshot() (poolStats, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats, p.left
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
