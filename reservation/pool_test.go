package reservation

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// chain is a fake chain: one counter, reservations answered at once or
// held until released.
type chain struct {
	mu      sync.Mutex
	next    uint64
	calls   int
	fail    error
	hold    chan struct{} // non-nil: reservations wait for it
	counts  []uint64      // each reservation's count
	started chan struct{} // receives one value per reservation started
}

func newChain() *chain { return &chain{started: make(chan struct{}, 100)} }

func (c *chain) reserve(ctx context.Context, count, from uint64) (Reservation[int], error) {
	c.mu.Lock()
	c.calls++
	n, hold, fail := c.calls, c.hold, c.fail
	c.counts = append(c.counts, count)
	c.mu.Unlock()
	c.started <- struct{}{}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return Reservation[int]{}, ctx.Err()
		}
	}
	if fail != nil {
		return Reservation[int]{}, fail
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	base := max(c.next, from)
	c.next = base + count
	return Reservation[int]{Base: base, Count: count, Ref: n}, nil
}

func (c *chain) reservations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func fixed(n uint64) Config { return Config{Min: n, Max: n, Timeout: 5 * time.Second} }

// TestTakeCutsCommittedIDs: requests are cut in order from one reservation,
// each naming it, and the pool refills in the background once less than
// half is left, so the next requests do not wait.
func TestTakeCutsCommittedIDs(t *testing.T) {
	require := require.New(t)
	c := newChain()
	p := New(context.Background(), "r", c.reserve, fixed(100))
	ctx := ctxFor(t, 5*time.Second)

	first, err := p.Take(ctx, 10, 0)
	require.NoError(err)
	require.Equal(Taken[int]{Base: 0, Count: 10, Ref: 1, Waited: true}, first, "an empty pool waits for its first reservation")
	second, err := p.Take(ctx, 40, 0)
	require.NoError(err)
	require.Equal(Taken[int]{Base: 10, Count: 40, Ref: 1}, second)
	require.Equal(1, c.reservations(), "half is left: no refill yet")

	third, err := p.Take(ctx, 1, 0)
	require.NoError(err)
	require.Equal(uint64(50), third.Base)
	require.Eventually(func() bool { return p.Stats().Refills == 2 }, 5*time.Second, time.Millisecond, "below half: a refill runs")
	require.Equal(uint64(149), p.Stats().Left)
	require.False(p.Refilling())
	require.True(p.Holds(49))
	require.True(p.Holds(100), "the second reservation holds 100")
	require.False(p.Holds(101))
}

// TestTakeSkipsWhatItCannotServe: the tail of a reservation too short for
// a request, and ids below the request's bound, are skipped and counted,
// never handed out.
func TestTakeSkipsWhatItCannotServe(t *testing.T) {
	require := require.New(t)
	c := newChain()
	p := New(context.Background(), "r", c.reserve, fixed(100))
	ctx := ctxFor(t, 5*time.Second)

	got, err := p.Take(ctx, 30, 0)
	require.NoError(err)
	require.Equal(uint64(0), got.Base)
	got, err = p.Take(ctx, 60, 0)
	require.NoError(err)
	require.Equal(uint64(30), got.Base)
	got, err = p.Take(ctx, 20, 0)
	require.NoError(err)
	require.Equal(uint64(100), got.Base, "the 10 ids left of the first reservation are too few")
	got, err = p.Take(ctx, 5, 150)
	require.NoError(err)
	require.Equal(uint64(150), got.Base, "ids below the bound are skipped")
	require.Equal(uint64(10+30), p.Stats().Skipped)
	require.Equal(uint64(115), p.Stats().Taken)

	_, err = p.Take(ctx, 101, 0)
	require.ErrorIs(err, ErrCount)
	_, err = p.Take(ctx, 0, 0)
	require.ErrorIs(err, ErrCount)
}

// TestFailedRefill: a request that waited for a refill that failed gets
// its error (ErrRefill, wrapping the cause); within RetryAfter the next
// requests fail with it at once instead of asking the chain again; after
// it, a request starts a new refill.
func TestFailedRefill(t *testing.T) {
	require := require.New(t)
	c := newChain()
	boom := errors.New("owner down")
	c.fail = boom
	cfg := fixed(10)
	cfg.RetryAfter = 200 * time.Millisecond
	p := New(context.Background(), "r", c.reserve, cfg)

	_, err := p.Take(ctxFor(t, 5*time.Second), 1, 0)
	require.ErrorIs(err, ErrRefill)
	require.ErrorIs(err, boom)
	_, err = p.Take(ctxFor(t, 5*time.Second), 1, 0)
	require.ErrorIs(err, boom)
	require.Equal(1, c.reservations(), "within RetryAfter the chain is not asked again")
	require.Equal(uint64(1), p.Stats().Failures)

	c.mu.Lock()
	c.fail = nil
	c.mu.Unlock()
	require.Eventually(func() bool {
		_, err := p.Take(ctxFor(t, 5*time.Second), 1, 0)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(2, c.reservations())
}

// TestNoRetryAfterRetriesAtOnce: without RetryAfter (an owner's pool),
// the next request after a failure asks the chain again.
func TestNoRetryAfterRetriesAtOnce(t *testing.T) {
	require := require.New(t)
	c := newChain()
	c.fail = errors.New("not accepted")
	p := New(context.Background(), "r", c.reserve, fixed(10))
	_, err := p.Take(ctxFor(t, 5*time.Second), 1, 0)
	require.ErrorIs(err, ErrRefill)
	_, err = p.Take(ctxFor(t, 5*time.Second), 1, 0)
	require.ErrorIs(err, ErrRefill)
	require.Equal(2, c.reservations())
}

// TestWaitBoundedByContext: a request waits for the refill in flight until
// its context ends; with FailFast, one arriving after the refill already
// ran longer than its whole deadline fails at once.
func TestWaitBoundedByContext(t *testing.T) {
	require := require.New(t)
	c := newChain()
	c.hold = make(chan struct{})
	cfg := fixed(10)
	cfg.FailFast = true
	p := New(context.Background(), "r", c.reserve, cfg)

	_, err := p.Take(ctxFor(t, 50*time.Millisecond), 1, 0)
	require.ErrorIs(err, ErrEmpty)
	require.ErrorIs(err, context.DeadlineExceeded)
	require.True(p.Refilling())

	_, err = p.Take(ctxFor(t, 20*time.Millisecond), 1, 0)
	require.ErrorIs(err, ErrEmpty)
	require.Equal(uint64(1), p.Stats().FastFails, "the refill ran 50 ms already, more than this request's 20")
	require.Equal(1, c.reservations(), "one refill at a time")

	got := make(chan error, 1)
	go func() {
		_, err := p.Take(ctxFor(t, time.Minute), 1, 0)
		got <- err
	}()
	require.Eventually(func() bool { return p.Stats().Waits == 2 }, 5*time.Second, time.Millisecond)
	close(c.hold)
	require.NoError(<-got)
}

// TestSizedByRate: with a horizon, a refill asks for the observed rate
// times it, within [Min, Max].
func TestSizedByRate(t *testing.T) {
	require := require.New(t)
	p := New(context.Background(), "r", newChain().reserve, Config{Min: 100, Max: 1000, Horizon: 10 * time.Second})
	now := time.Now()
	require.Equal(uint64(100), p.target(1, now), "no rate yet: Min")
	require.Equal(uint64(300), p.target(300, now), "at least the request")
	p.meter.add(50, now)
	p.meter.add(0, now.Add(time.Second))
	require.Equal(uint64(250), p.target(1, now.Add(time.Second)), "25 ids/s (the average of 0 and 50) for 10 s")
	p.meter.add(10_000, now.Add(1500*time.Millisecond))
	require.Equal(uint64(1000), p.target(1, now.Add(1500*time.Millisecond)), "a surge, capped at Max")
}

// TestConcurrentTakesNeverShareAnID: whatever the interleaving, every id
// is handed out once.
func TestConcurrentTakesNeverShareAnID(t *testing.T) {
	c := newChain()
	p := New(context.Background(), "r", c.reserve, Config{Min: 64, Max: 512, Horizon: time.Second, Timeout: 5 * time.Second})
	var (
		mu   sync.Mutex
		seen = map[uint64]bool{}
		wg   sync.WaitGroup
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				got, err := p.Take(ctxFor(t, 10*time.Second), uint64(1+(g+i)%5), uint64(i))
				if !assertNoErr(t, err) {
					return
				}
				mu.Lock()
				for id := got.Base; id < got.Base+got.Count; id++ {
					if seen[id] {
						t.Errorf("id %d handed out twice", id)
					}
					seen[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st := p.Stats()
	require.Equal(t, uint64(len(seen)), st.Taken)
}

func assertNoErr(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
