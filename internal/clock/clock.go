// Package clock is where the parts of a node read the time and wait: the
// system's clock in a node, a manual one in tests. A part that takes its
// clock from outside (as etcd's raft takes its ticks) can be tested in
// milliseconds: the test moves the time and sees what the part did, with
// no sleep and no race against a real timer.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers and tickers on it. Implementations
// are safe for concurrent use.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
	NewTicker(d time.Duration) Ticker
}

// Timer is time.Timer behind an interface: C fires once, d after it was
// made or last Reset.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Ticker is time.Ticker behind an interface.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the system's clock.
func Real() Clock { return realClock{} }

// WithNow is the system's timers and tickers with now as the time: a node
// whose tests set its clock but let its waits run in real time.
func WithNow(now func() time.Time) Clock { return nowClock{realClock{}, now} }

type realClock struct{}

type nowClock struct {
	realClock
	now func() time.Time
}

func (c nowClock) Now() time.Time { return c.now() }

func (realClock) Now() time.Time                   { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer   { return realTimer{time.NewTimer(d)} }
func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Manual is a clock that moves only when told to (Advance, Set): every
// timer and ticker due by then fires, in time order. Channels are buffered
// as time's are (one value), so a part that is slow to read loses ticks
// rather than blocking the test. Waiting returns how many timers and
// tickers are armed, so that a test can wait until a part has gone to
// sleep before it moves the time.
type Manual struct {
	mu      sync.Mutex // guards the fields below
	now     time.Time
	waiters []*waiter
	armed   chan struct{} // closed and replaced whenever a waiter is armed
}

// NewManual returns a manual clock at t.
func NewManual(t time.Time) *Manual { return &Manual{now: t, armed: make(chan struct{})} }

var _ Clock = (*Manual)(nil)

// waiter is one timer (period 0) or ticker.
type waiter struct {
	m      *Manual
	at     time.Time // next firing; zero when stopped
	period time.Duration
	c      chan time.Time
}

// Now is the manual time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// NewTimer fires once, d from now (at once for d <= 0).
func (m *Manual) NewTimer(d time.Duration) Timer {
	w := &waiter{m: m, c: make(chan time.Time, 1)}
	w.Reset(d)
	return w
}

// NewTicker fires every d from now; d must be positive.
func (m *Manual) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	w := &waiter{m: m, c: make(chan time.Time, 1), period: d}
	w.Reset(d)
	return ticker{w}
}

type ticker struct{ w *waiter }

func (t ticker) C() <-chan time.Time { return t.w.c }
func (t ticker) Stop()               { t.w.Stop() }

// Advance moves the clock d forward.
func (m *Manual) Advance(d time.Duration) { m.Set(m.Now().Add(d)) }

// Set moves the clock to t (never backwards) and fires what is due.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.Before(m.now) {
		t = m.now
	}
	for {
		sort.Slice(m.waiters, func(i, j int) bool { return m.waiters[i].at.Before(m.waiters[j].at) })
		if len(m.waiters) == 0 || m.waiters[0].at.After(t) {
			break
		}
		w := m.waiters[0]
		m.now = w.at
		select {
		case w.c <- w.at:
		default: // an unread tick is dropped, as time's are
		}
		if w.period > 0 {
			w.at = w.at.Add(w.period)
		} else {
			w.at = time.Time{}
			m.waiters = m.waiters[1:]
		}
	}
	m.now = t
}

// Waiting is how many timers and tickers are armed.
func (m *Manual) Waiting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}

// Armed returns a channel closed when a timer or ticker is next armed.
func (m *Manual) Armed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.armed
}

// AwaitWaiting returns once at least n timers and tickers are armed (a
// part has gone to sleep on the clock), or false after within of real
// time.
func (m *Manual) AwaitWaiting(n int, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		armed := m.Armed()
		if m.Waiting() >= n {
			return true
		}
		select {
		case <-armed:
		case <-deadline.C:
			return m.Waiting() >= n
		}
	}
}

// Next is when the earliest armed timer or ticker fires (false: none).
func (m *Manual) Next() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	for _, w := range m.waiters {
		if next.IsZero() || w.at.Before(next) {
			next = w.at
		}
	}
	return next, !next.IsZero()
}

func (w *waiter) C() <-chan time.Time { return w.c }

// Stop disarms w; it reports whether w was armed.
func (w *waiter) Stop() bool {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.remove(w)
}

// Reset arms w to fire d from now; it reports whether w was armed.
func (w *waiter) Reset(d time.Duration) bool {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.remove(w)
	w.at = m.now.Add(max(d, 0))
	if w.at.Equal(m.now) && w.period == 0 {
		// Due now: fire at once, as time.NewTimer(0) does.
		select {
		case w.c <- w.at:
		default:
		}
		w.at = time.Time{}
		return was
	}
	m.waiters = append(m.waiters, w)
	close(m.armed)
	m.armed = make(chan struct{})
	return was
}

// remove disarms w; m.mu is held.
func (m *Manual) remove(w *waiter) bool {
	for i, o := range m.waiters {
		if o == w {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			w.at = time.Time{}
			return true
		}
	}
	return false
}
