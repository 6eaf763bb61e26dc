package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
)

func TestOwnerCacheBoundedAndEpochScoped(t *testing.T) {
	require := require.New(t)
	c := newOwnerCache(2)
	a, b := api.NodeID(ids.GenerateTestNodeID()), api.NodeID(ids.GenerateTestNodeID())
	_, ok := c.get("r1")
	require.False(ok)

	c.put("r1", 5, a)
	c.put("r2", 5, b)
	got, ok := c.get("r1") // r1 becomes most recently used
	require.True(ok)
	require.Equal(a, got)
	c.put("r3", 5, b)
	require.Equal(2, c.len())
	_, ok = c.get("r2")
	require.False(ok, "least recently used entry evicted")

	c.put("r1", 4, b) // a lagging node's view does not replace the newest epoch
	got, _ = c.get("r1")
	require.Equal(a, got)

	c.put("r9", 6, a) // a new epoch hides every older owner at once
	_, ok = c.get("r1")
	require.False(ok)

	c.forget("r9")
	_, ok = c.get("r9")
	require.False(ok)
	c.put("r8", 7, api.NodeID{})
	_, ok = c.get("r8")
	require.False(ok, "an empty owner (no hint data) is not cached")
}

func TestRetryDelayBounded(t *testing.T) {
	r := Retry{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond, MaxAttempts: 3, MaxRetryAfter: 100 * time.Millisecond}
	require.NoError(t, r.Verify())
	for attempt := 1; attempt < 100; attempt++ {
		nominal := min(r.Initial<<min(attempt-1, 10), r.Max)
		d := r.delay(attempt)
		require.GreaterOrEqual(t, d, nominal/2)
		require.LessOrEqual(t, d, nominal)
	}
	full := &api.Error{Code: -32012, Data: []byte(`{"retryAfterMs":100000}`)}
	require.Equal(t, 100*time.Millisecond, r.backoff(1, full), "RetryAfterMs is capped")
	require.ErrorIs(t, Retry{}.Verify(), errBadRetry)
}

// TestDefaultRetry: a write comes back within half a second of its owner's
// recovery (a new owner's first writes go into one block; docs/concepts/liveness.md)
// and still gives a node that never recovers at least five seconds.
func TestDefaultRetry(t *testing.T) {
	r := DefaultRetry()
	require.NoError(t, r.Verify())
	var least time.Duration
	for attempt := 1; attempt < r.MaxAttempts; attempt++ {
		d := r.delay(attempt)
		require.LessOrEqual(t, d, 500*time.Millisecond, "attempt %d", attempt)
		least += min(r.Initial<<min(attempt-1, 10), r.Max) / 2
	}
	require.GreaterOrEqual(t, least, 5*time.Second)
}

func TestSleepGivesUpBeforeDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	last := errors.New("last")
	start := time.Now()
	err := sleep(ctx, time.Second, last)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, last)
	require.Less(t, time.Since(start), 500*time.Millisecond)
}
