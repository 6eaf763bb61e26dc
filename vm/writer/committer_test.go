package writer

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
)

const (
	testWindow = 10 * time.Millisecond
	testBound  = 50 * time.Millisecond
)

// committed is one group handed to commit.
type committed struct {
	ranges []string
}

// runCommitter starts a committer with a 10 ms window, a 50 ms bound and
// groups of at most 4 on a manual clock; groups arrive on the channel.
func runCommitter(t *testing.T) (*committer, *clock.Manual, <-chan committed, context.CancelFunc) {
	clk := clock.NewManual(time.Unix(1000, 0))
	c := &committer{
		intents: make(chan intent, 16), clock: clk, window: testWindow, bound: testBound, maxEntries: 4,
		groups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "g"}, []string{"closed"}),
		done:   make(chan struct{}),
	}
	out := make(chan committed, 16)
	ctx, cancel := context.WithCancel(context.Background())
	go c.run(ctx, func(_ context.Context, group []intent) {
		var g committed
		for i, it := range group {
			g.ranges = append(g.ranges, it.entry.Range)
			it.reply <- intentResult{sub: Submitted{Index: i}}
		}
		out <- g
	})
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c, clk, out, cancel
}

// send queues a request without waiting for its answer.
func send(c *committer, rng string) chan intentResult {
	reply := make(chan intentResult, 1)
	c.intents <- intent{entry: txs.AllocateEntry{Range: rng, Count: 1}, reply: reply}
	return reply
}

func group(t *testing.T, out <-chan committed) committed {
	t.Helper()
	select {
	case g := <-out:
		return g
	case <-time.After(10 * time.Second):
		t.Fatal("no group")
		return committed{}
	}
}

func none(t *testing.T, out <-chan committed) {
	t.Helper()
	select {
	case g := <-out:
		t.Fatalf("group %v closed early", g.ranges)
	default:
	}
}

func closedBy(c *committer, why string) float64 {
	var m dto.Metric
	if err := c.groups.WithLabelValues(why).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// TestLoneRequestWaitsTheWindow: with nobody expected back, a group closes
// at the window, not before.
func TestLoneRequestWaitsTheWindow(t *testing.T) {
	c, clk, out, _ := runCommitter(t)
	send(c, "a")
	require.True(t, clk.AwaitWaiting(1, 10*time.Second))
	clk.Advance(testWindow - time.Millisecond)
	none(t, out)
	clk.Advance(time.Millisecond)
	require.Equal(t, []string{"a"}, group(t, out).ranges)
	require.Equal(t, 1.0, closedBy(c, closedWindow))
}

// TestReturningClientsShareAGroup: three callers were answered at the last
// accept; a group waits past the window until the third is back, and
// closes as soon as it is.
func TestReturningClientsShareAGroup(t *testing.T) {
	c, clk, out, _ := runCommitter(t)
	for range 3 {
		c.answer()
	}
	c.accepted() // the period before this accept answered three
	send(c, "a")
	require.True(t, clk.AwaitWaiting(1, 10*time.Second))
	clk.Advance(testWindow)
	require.True(t, clk.AwaitWaiting(1, 10*time.Second), "the window passed: waiting up to the bound")
	send(c, "b")
	none(t, out)
	send(c, "c")
	require.Equal(t, []string{"a", "b", "c"}, group(t, out).ranges)
	require.Equal(t, 1.0, closedBy(c, closedReturned))
}

// TestClientsThatLeaveCostTheBound: expected clients that never come back
// hold a group until the bound from its first request, no longer.
func TestClientsThatLeaveCostTheBound(t *testing.T) {
	c, clk, out, _ := runCommitter(t)
	for range 3 {
		c.answer()
	}
	send(c, "a")
	require.True(t, clk.AwaitWaiting(1, 10*time.Second))
	clk.Advance(testWindow)
	require.True(t, clk.AwaitWaiting(1, 10*time.Second))
	clk.Advance(testBound - testWindow - time.Millisecond)
	none(t, out)
	clk.Advance(time.Millisecond)
	require.Equal(t, []string{"a"}, group(t, out).ranges)
	require.Equal(t, 1.0, closedBy(c, closedBound))

	// Two accepts later they are forgotten: a lone request waits the window.
	c.accepted()
	c.accepted()
	require.Zero(t, c.expected())
}

// TestFullGroupClosesAtOnce: maxEntries requests close a group without any
// time passing.
func TestFullGroupClosesAtOnce(t *testing.T) {
	c, _, out, _ := runCommitter(t)
	for _, r := range []string{"a", "b", "c", "d", "e"} {
		send(c, r)
	}
	require.Equal(t, []string{"a", "b", "c", "d"}, group(t, out).ranges)
	require.Equal(t, 1.0, closedBy(c, closedFull))
}

// TestStoppingAnswersEveryQueuedRequest: at shutdown the group in
// formation is committed and the queued requests are answered
// ErrShuttingDown, none left waiting.
func TestStoppingAnswersEveryQueuedRequest(t *testing.T) {
	c, clk, out, cancel := runCommitter(t)
	send(c, "a")
	require.True(t, clk.AwaitWaiting(1, 10*time.Second))
	cancel()
	require.Equal(t, []string{"a"}, group(t, out).ranges)
	<-c.done
	late := send(c, "b")
	c.drain()
	require.ErrorIs(t, (<-late).err, ErrShuttingDown)
	require.Equal(t, 1.0, closedBy(c, closedStopping))
}

// TestEnqueueRefusesWhenFull: a full queue answers MempoolFull at once.
func TestEnqueueRefusesWhenFull(t *testing.T) {
	c := &committer{intents: make(chan intent, 1)}
	c.intents <- intent{}
	_, err := c.enqueue(context.Background(), intent{reply: make(chan intentResult, 1)})
	require.ErrorContains(t, err, "group-commit queue is full")
}
