package writer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
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
	return w.enqueue(ctx, intent{entry: entry, reply: make(chan intentResult, 1)})
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
	return w.enqueue(ctx, intent{manifest: &entry, reply: make(chan intentResult, 1)})
}

func (w *Writer) enqueue(ctx context.Context, it intent) (Submitted, error) {
	select {
	case w.intents <- it:
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
// validator (docs/liveness.md, "What a failover waits for").
func (w *Writer) checkOwned(ctx context.Context, ranges []string) error {
	_, _, err := w.pinFor(ctx, ranges)
	if !errors.Is(err, ErrMembershipOpening) {
		return err // the common case takes no other lock
	}
	bound := time.NewTimer(OpeningWait)
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
		case <-bound.C:
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

// runCommitter collects intents into groups and signs each group as one
// transaction. A group closes when it is full; or once the window has
// passed and it holds as many requests as callers were answered since the
// last accept (or in the period before, if more: expected); or at
// groupCommitReturnMs from its first request. Closed-loop clients come
// back in a burst after each accept, spread over more than the window on a
// busy node; waiting for them signs one transaction where the window alone
// signed several, and each transaction costs every other validator a BLS
// verification. A lone client, the only one answered, waits the window
// only.
func (w *Writer) runCommitter(ctx context.Context) {
	defer close(w.committerDone)
	window := w.genesis.GroupCommitWindow()
	bound := max(window, w.genesis.GroupCommitReturn())
	for {
		var first intent
		select {
		case first = <-w.intents:
		case <-ctx.Done():
			w.drainIntents()
			return
		}
		group := []intent{first}
		in := func() bool { return int64(len(group)) >= w.expected() }
		timer := time.NewTimer(window)
		waited, closed := false, closedFull // waited: the window has passed
	collect:
		for len(group) < w.genesis.GroupCommitMaxEntries {
			select {
			case it := <-w.intents:
				group = append(group, it)
				if waited && in() {
					closed = closedReturned
					break collect
				}
			case <-timer.C:
				switch {
				case waited:
					closed = closedBound
					break collect
				case in() || bound == window:
					closed = closedWindow
					break collect
				}
				waited = true
				timer.Reset(bound - window)
			case <-ctx.Done():
				closed = closedStopping
				break collect
			}
		}
		timer.Stop()
		w.metrics.groups.WithLabelValues(closed).Inc()
		w.commitGroup(ctx, group)
	}
}

// expected is how many requests a group waits for: the callers answered
// since the last accept, or in the period before it if more.
func (w *Writer) expected() int64 {
	return max(w.answered.Load(), w.answeredBefore.Load())
}

func (w *Writer) drainIntents() {
	for {
		select {
		case it := <-w.intents:
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
