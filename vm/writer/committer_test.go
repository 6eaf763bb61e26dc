package writer

import (
	"context"
	"sync/atomic"
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
	return runCommitterWith(t, nil, newTracker(1))
}

// runCommitterWith is runCommitter on a chain where a block is processing
// whenever processing says so, its decisions told by tracker.
func runCommitterWith(t *testing.T, processing func() bool, tracker *tracker) (*committer, *clock.Manual, <-chan committed, context.CancelFunc) {
	clk := clock.NewManual(time.Unix(1000, 0))
	c := &committer{
		intents: make(chan intent, 16), clock: clk, window: testWindow, bound: testBound, maxEntries: 4,
		groups:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "g"}, []string{"closed"}),
		processing: processing, decided: tracker.wait, done: make(chan struct{}),
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

// twoComeBack: of two callers expected back after "a", the group waits
// for the second and closes as soon as it is in.
func twoComeBack(t *testing.T, c *committer, out <-chan committed) {
	t.Helper()
	send(c, "b")
	none(t, out)
	send(c, "c")
	require.Equal(t, []string{"a", "b", "c"}, group(t, out).ranges)
	require.Equal(t, 1.0, closedBy(c, closedReturned))
}

// aloneAfter: the group of "a" alone closes, for why, after d more and
// not before.
func aloneAfter(t *testing.T, c *committer, clk *clock.Manual, out <-chan committed, d time.Duration, why string) {
	t.Helper()
	clk.Advance(d - time.Millisecond)
	none(t, out)
	clk.Advance(time.Millisecond)
	require.Equal(t, []string{"a"}, group(t, out).ranges)
	require.Equal(t, 1.0, closedBy(c, why))
}

// rearmed runs f and returns once the committer has set its timer again.
func rearmed(t *testing.T, clk *clock.Manual, f func()) {
	t.Helper()
	armed := clk.Armed()
	f()
	select {
	case <-armed:
	case <-time.After(10 * time.Second):
		t.Fatal("the committer did not set its timer")
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
	twoComeBack(t, c, out)
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

// holding starts a committer on a chain with a block processing and one
// request in a group that has passed its window: the group holds for the
// block's decision.
func holding(t *testing.T) (*committer, *clock.Manual, <-chan committed, *chainState) {
	chain := &chainState{tracker: newTracker(1)}
	chain.busy.Store(true)
	c, clk, out, _ := runCommitterWith(t, chain.busy.Load, chain.tracker)
	send(c, "a")
	require.True(t, clk.AwaitWaiting(1, 10*time.Second))
	rearmed(t, clk, func() { clk.Advance(testWindow) })
	return c, clk, out, chain
}

// chainState is what the committer reads of the chain: whether a block
// is processing, and the tracker its decisions wake.
type chainState struct {
	busy    atomic.Bool
	tracker *tracker
}

// accept is this node's accept of the processing block, answering n
// waiting callers: in Accepted's order, the committer's new period, then
// the tracker's wake, then the woken callers count themselves.
func accept(t *testing.T, c *committer, clk *clock.Manual, chain *chainState, n int) {
	t.Helper()
	rearmed(t, clk, func() {
		chain.busy.Store(false)
		c.accepted()
		chain.tracker.wake()
		for range n {
			c.answer()
		}
	})
}

// TestGroupHoldsForTheProcessingBlock: with a block processing, a group
// that nobody else is expected to join does not close at the window: its
// transaction could not be built before that block is decided. The
// callers the block's accept answers come back to it, and it closes as
// soon as they are in: clients answered at two accepts share one block.
func TestGroupHoldsForTheProcessingBlock(t *testing.T) {
	c, clk, out, busy := holding(t)
	clk.Advance(testBound - testWindow - time.Millisecond)
	none(t, out)

	accept(t, c, clk, busy, 2)
	rearmed(t, clk, func() { clk.Advance(testWindow) })
	twoComeBack(t, c, out)
}

// TestHeldGroupWaitsTheBoundFromTheAccept: callers answered at the accept
// that do not come back hold the group until the bound from the accept,
// no longer.
func TestHeldGroupWaitsTheBoundFromTheAccept(t *testing.T) {
	c, clk, out, busy := holding(t)
	accept(t, c, clk, busy, 1)
	rearmed(t, clk, func() { clk.Advance(testWindow) })
	aloneAfter(t, c, clk, out, testBound-testWindow, closedBound)
}

// TestHoldEndsAtTheBound: a block that stays processing holds a group for
// the bound from its first request, no longer.
func TestHoldEndsAtTheBound(t *testing.T) {
	c, clk, out, _ := holding(t)
	aloneAfter(t, c, clk, out, testBound-testWindow, closedBound)
}

// TestAcceptThatAnsweredNobodyEndsTheHold: a block that answered none of
// this node's callers ends the hold at the window after its accept.
func TestAcceptThatAnsweredNobodyEndsTheHold(t *testing.T) {
	c, clk, out, busy := holding(t)
	accept(t, c, clk, busy, 0)
	aloneAfter(t, c, clk, out, testWindow, closedWindow)
}

// TestNoHoldWithoutAProcessingBlock: on an idle chain a lone request
// closes its group at the window.
func TestNoHoldWithoutAProcessingBlock(t *testing.T) {
	c, clk, out, _ := runCommitterWith(t, func() bool { return false }, newTracker(1))
	send(c, "a")
	require.True(t, clk.AwaitWaiting(1, 10*time.Second))
	clk.Advance(testWindow)
	require.Equal(t, []string{"a"}, group(t, out).ranges)
	require.Equal(t, 1.0, closedBy(c, closedWindow))
}
