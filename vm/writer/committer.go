package writer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// Submitted says where a request's entry went: transaction, entry index and
// the P-chain height and owner it was pinned to.
type Submitted struct {
	TxID         ids.ID
	Index        int
	PChainHeight uint64
	Owner        ids.NodeID
}

// intent is one request waiting for a group: an allocation, or a
// versioned manifest write (manifest set).
type intent struct {
	entry    txs.AllocateEntry
	manifest *txs.ManifestEntry
	reply    chan intentResult
}

type intentResult struct {
	sub Submitted
	err error
}

// AllocateOne queues one allocate request for group commit: concurrent
// requests are signed together as one transaction (one BLS signature,
// verified once by every validator; runCommitter says which).
func (w *Writer) AllocateOne(ctx context.Context, entry txs.AllocateEntry) (Submitted, error) {
	if err := w.checkOwned(ctx, []string{entry.Range}); err != nil {
		return Submitted{}, err
	}
	return w.committer.enqueue(ctx, intent{entry: entry, reply: make(chan intentResult, 1)})
}

// WriteManifest queues one versioned manifest write of a bucket this node
// owns for group commit, with the allocations and the other writes that
// arrive meanwhile: concurrent writes are signed as one ManifestTx. The
// entry's condition is checked when the transaction executes; its receipt
// entry says whether it wrote (Version) or why not (Refused).
func (w *Writer) WriteManifest(ctx context.Context, entry txs.ManifestEntry) (Submitted, error) {
	if err := w.ManifestsActive(); err != nil {
		return Submitted{}, err
	}
	if err := entry.Verify(w.genesis.TxLimits); err != nil {
		return Submitted{}, err
	}
	if err := w.checkOwned(ctx, []string{entry.Bucket}); err != nil {
		return Submitted{}, err
	}
	return w.committer.enqueue(ctx, intent{manifest: &entry, reply: make(chan intentResult, 1)})
}

// committer forms groups of intents and hands each to commit (the
// writer's signing), on its own goroutine (run). It owns the queue of
// intents and the count of callers answered, which decides how long a
// group waits for returning clients.
type committer struct {
	intents    chan intent
	clock      clock.Clock
	window     time.Duration // groupCommitWindowMs
	bound      time.Duration // groupCommitReturnMs, at least the window
	maxEntries int
	groups     *prometheus.CounterVec // signed groups, by why they closed
	// answered counts the waiting callers answered (their transaction
	// decided) since the last accept, answeredBefore those of the period
	// before it: closed-loop clients, who send their next request once
	// answered. A group keeps collecting until as many requests as the
	// larger of the two are in, for up to the bound (run). The period
	// before covers requests that arrive before this node's own accept
	// (clients answered by a faster node). Clients that leave are
	// forgotten at the second accept after their answers, so they delay
	// groups for that long at most, each by the bound.
	answered, answeredBefore atomic.Int64
	// processing says whether the block the next one builds on is still
	// processing (nil: never), and decided is closed at the next decision
	// here (the tracker's): a group holds for that block (collect).
	processing func() bool
	decided    func() <-chan struct{}
	done       chan struct{} // closed when run returns
}

func newCommitter(g *config.Genesis, clk clock.Clock, groups *prometheus.CounterVec, processing func() bool, decided func() <-chan struct{}) *committer {
	window := g.GroupCommitWindow()
	return &committer{
		intents: make(chan intent, 4*g.GroupCommitMaxEntries), clock: clk,
		window: window, bound: max(window, g.GroupCommitReturn()), maxEntries: g.GroupCommitMaxEntries,
		groups: groups, processing: processing, decided: decided, done: make(chan struct{}),
	}
}

// answer counts a waiting caller answered by a decision: a closed-loop
// client sends its next request now.
func (c *committer) answer() { c.answered.Add(1) }

// accepted starts a new period at a block's acceptance.
func (c *committer) accepted() { c.answeredBefore.Store(c.answered.Swap(0)) }

func (c *committer) enqueue(ctx context.Context, it intent) (Submitted, error) {
	select {
	case c.intents <- it:
	case <-ctx.Done():
		return Submitted{}, ctx.Err()
	default:
		return Submitted{}, fmt.Errorf("%w: group-commit queue is full", mempool.ErrFull)
	}
	select {
	case r := <-it.reply:
		return r.sub, r.err
	case <-ctx.Done():
		return Submitted{}, ctx.Err()
	}
}

// checkOwned fails fast with NotOwner before a request waits for a group.
// A range that moves to this node at the next block is signed at once,
// bound to that block (pinFor), so that it rides in it. When it cannot be
// bound (a processing block may take that height) it waits for that block
// instead (ErrMembershipOpening), at most OpeningWait and never past ctx:
// the request's write is then signed as soon as the block is accepted and
// goes into the first block after it, with the other new owners' first
// writes. Answered NotReady at once, the client came back after its
// back-off, often after that block was built, and its write waited for the
// next height, which costs 5 s per proposer slot drawn for a dead
// validator (docs/concepts/liveness.md, "What a failover waits for").
func (w *Writer) checkOwned(ctx context.Context, ranges []string) error {
	_, _, err := w.pinFor(ctx, ranges)
	if !errors.Is(err, ErrMembershipOpening) {
		return err // the common case takes no other lock
	}
	bound := w.clock.NewTimer(OpeningWait)
	defer bound.Stop()
	w.metrics.openingWaits.Inc()
	defer w.metrics.openingWaits.Dec()
	for {
		decided := w.tracker.wait()
		// Checked again after taking decided, so that no accept is missed.
		if _, _, err = w.pinFor(ctx, ranges); !errors.Is(err, ErrMembershipOpening) {
			return err
		}
		select {
		case <-decided:
		case <-bound.C():
			return err
		case <-ctx.Done():
			return err
		}
	}
}

// Why a group closed (the group_commits_total label).
const (
	closedWindow   = "window"
	closedReturned = "returned"
	closedBound    = "bound"
	closedFull     = "full"
	closedStopping = "stopping"
)

// run collects intents into groups and hands each group to commit, until
// ctx ends; then it answers the intents still queued with
// ErrShuttingDown. A group closes when it is full; or once the window has
// passed and it holds as many requests as callers were answered since the
// last accept (or in the period before, if more: expected); or at the
// bound from its first request. Closed-loop clients come back in a burst
// after each accept, spread over more than the window on a busy node;
// waiting for them signs one transaction where the window alone signed
// several, and each transaction costs every other validator a BLS
// verification. A lone client, the only one answered, waits the window
// only.
func (c *committer) run(ctx context.Context, commit func(context.Context, []intent)) {
	defer close(c.done)
	for {
		var first intent
		select {
		case first = <-c.intents:
		case <-ctx.Done():
			c.drain()
			return
		}
		group, closed := c.collect(ctx, first)
		c.groups.WithLabelValues(closed).Inc()
		commit(ctx, group)
	}
}

// collect forms one group from its first intent and says why it closed.
//
// Once the window has passed, a group holds while a block is processing
// here (for up to the bound): its transaction could not be built before
// that block is decided anyway, the builder's pace being longer than a
// decision. At the accept, the callers it answered come back to this
// group, which then waits for as many more requests (up to the bound from
// the accept), so that clients answered at different accepts ride one
// block instead of alternating between two.
func (c *committer) collect(ctx context.Context, first intent) ([]intent, string) {
	group := []intent{first}
	var base int64 // requests in before the accept the group held for
	expected := c.expected
	in := func() bool { return int64(len(group))-base >= expected() }
	timer := c.clock.NewTimer(c.window)
	defer timer.Stop()
	waited := false          // the window has passed
	holding := false         // the group has held for a processing block
	var held <-chan struct{} // closed at the decision it holds for
	for len(group) < c.maxEntries {
		select {
		case it := <-c.intents:
			group = append(group, it)
			if waited && held == nil && in() {
				return group, closedReturned
			}
		case <-held:
			held, waited = nil, false
			base = int64(len(group))
			expected = c.answered.Load
			timer.Reset(c.window) // for the accept's answers to be counted
		case <-timer.C():
			if waited {
				return group, closedBound
			}
			waited = true
			if !holding {
				if held = c.holdFor(); held != nil {
					holding = true
					timer.Reset(c.bound - c.window)
					continue
				}
			}
			if in() || c.bound == c.window {
				return group, closedWindow
			}
			timer.Reset(c.bound - c.window)
		case <-ctx.Done():
			return group, closedStopping
		}
	}
	return group, closedFull
}

// holdFor is closed at the next decision if a group should hold for a
// processing block (nil: it should not).
func (c *committer) holdFor() <-chan struct{} {
	if c.processing == nil || c.bound == c.window {
		return nil
	}
	next := c.decided() // taken first, so that a decision in between is not missed
	if !c.processing() {
		return nil
	}
	return next
}

// expected is how many requests a group waits for: the callers answered
// since the last accept, or in the period before it if more.
func (c *committer) expected() int64 {
	return max(c.answered.Load(), c.answeredBefore.Load())
}

func (c *committer) drain() {
	for {
		select {
		case it := <-c.intents:
			it.reply <- intentResult{err: ErrShuttingDown}
		default:
			return
		}
	}
}

// commitGroup signs a group's allocations as one AllocateTx and its
// manifest writes as ManifestTxs of at most maxTxBytes each.
func (w *Writer) commitGroup(ctx context.Context, group []intent) {
	var allocs, writes []intent
	for _, it := range group {
		if it.manifest != nil {
			writes = append(writes, it)
		} else {
			allocs = append(allocs, it)
		}
	}
	if len(allocs) > 0 {
		w.commitKind(ctx, allocs, w.signAllocations)
	}
	// What one transaction can carry besides its header and signature.
	room := w.genesis.TxLimits.MaxTxBytes - txs.Overhead
	for len(writes) > 0 {
		n, size := 1, writes[0].manifest.EncodedLen()
		for n < len(writes) && size+writes[n].manifest.EncodedLen() <= room {
			size += writes[n].manifest.EncodedLen()
			n++
		}
		w.commitKind(ctx, writes[:n], w.signManifests)
		writes = writes[n:]
	}
}

func (w *Writer) signAllocations(ctx context.Context, group []intent) (*txs.Tx, error) {
	entries := make([]txs.AllocateEntry, len(group))
	for i, it := range group {
		entries[i] = it.entry
	}
	return w.Allocate(ctx, entries)
}

func (w *Writer) signManifests(ctx context.Context, group []intent) (*txs.Tx, error) {
	entries := make([]txs.ManifestEntry, len(group))
	for i, it := range group {
		entries[i] = *it.manifest
	}
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.ManifestTx{Header: h, Entries: entries}
	}, (&txs.ManifestTx{Entries: entries}).Ranges())
}

// commitKind signs one group of one kind and answers its requests.
func (w *Writer) commitKind(ctx context.Context, group []intent, sign func(context.Context, []intent) (*txs.Tx, error)) {
	tx, err := sign(ctx, group)
	if err != nil && len(group) > 1 {
		var noe *execute.NotOwnerError
		if errors.As(err, &noe) {
			// The membership moved while the group formed: answer each request
			// on its own so owned ranges still go through.
			for _, it := range group {
				w.commitKind(ctx, []intent{it}, sign)
			}
			return
		}
	}
	for i, it := range group {
		if err != nil {
			it.reply <- intentResult{err: err}
			continue
		}
		h := tx.Unsigned.Head()
		it.reply <- intentResult{sub: Submitted{TxID: tx.ID(), Index: i, PChainHeight: h.PChainHeight, Owner: h.Owner}}
	}
}
