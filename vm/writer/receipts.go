package writer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/vm/chain"
)

// tracker remembers what happened to transactions this node saw but the
// chain did not accept: rejections with their reason and re-pinned
// replacements. It is bounded (oldest first out) and wakes waiters whenever
// something is decided.
type tracker struct {
	mu       sync.Mutex
	limit    int
	rejected map[ids.ID]string
	replaced map[ids.ID]ids.ID
	order    []ids.ID
	changed  chan struct{} // closed and replaced on every decision
}

func newTracker(limit int) *tracker {
	return &tracker{limit: max(limit, 1), rejected: map[ids.ID]string{}, replaced: map[ids.ID]ids.ID{}, changed: make(chan struct{})}
}

func (t *tracker) reject(id ids.ID, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remember(id)
	t.rejected[id] = reason
	t.wakeLocked()
}

func (t *tracker) replace(old, replacement ids.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remember(old)
	t.replaced[old] = replacement
	t.wakeLocked()
}

func (t *tracker) lookup(id ids.ID) (reason string, rejected bool, replacement ids.ID, replaced bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reason, rejected = t.rejected[id]
	replacement, replaced = t.replaced[id]
	return
}

// wait returns a channel closed at the next decision (accept, reject or
// replacement).
func (t *tracker) wait() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

func (t *tracker) wake() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wakeLocked()
}

func (t *tracker) wakeLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tracker) remember(id ids.ID) {
	if _, ok := t.rejected[id]; ok {
		return
	}
	if _, ok := t.replaced[id]; ok {
		return
	}
	t.order = append(t.order, id)
	if len(t.order) > t.limit {
		old := t.order[0]
		t.order = t.order[1:]
		delete(t.rejected, old)
		delete(t.replaced, old)
	}
}

// acceptedReceipts is how many accepted receipts a writer keeps decoded: a
// group-committed transaction wakes each of its writes' waiters, and every
// one asks for the same receipt at once.
const acceptedReceipts = 64

// acceptedReceipt is an accepted transaction's receipt, decoded once. An
// accepted receipt never changes, so waiters share its entries; each gets a
// reply of its own, which it may trim or annotate (entries are never
// written in place).
type acceptedReceipt struct {
	height  uint64
	entries []api.ReceiptEntry
}

func (a acceptedReceipt) reply(txID ids.ID) *api.ReceiptReply {
	return &api.ReceiptReply{TxID: api.ID(txID), Status: api.StatusAccepted, Height: a.height, Entries: a.entries}
}

// Receipt reports a transaction's status from accepted state, the pending
// pool and processing blocks, and what this node remembers of rejections and
// re-pins.
func (w *Writer) Receipt(txID ids.ID) (*api.ReceiptReply, error) {
	if a, ok := w.accepted.Get(txID); ok {
		return a.reply(txID), nil
	}
	rc, err := w.chain.State().Receipt(txID)
	switch {
	case err == nil:
		entries := make([]api.ReceiptEntry, len(rc.Entries))
		for i, e := range rc.Entries {
			entries[i] = api.ReceiptEntry{
				Range: e.Range, Base: e.Base, Count: e.Count, Bucket: e.Bucket, Key: e.Key, Deleted: e.Deleted,
				Version: e.Version, Refused: e.Refused, Detail: e.Detail, Current: e.Current, ID: e.ID,
				Lease: string(e.Lease), Holder: e.Holder, Token: e.Token, ExpiresMs: e.ExpiresMs,
			}
		}
		a := acceptedReceipt{height: rc.Height, entries: entries}
		w.accepted.Put(txID, a)
		return a.reply(txID), nil
	case !errors.Is(err, state.ErrNotFound):
		return nil, err
	}
	if reason, rejected, repl, replaced := w.tracker.lookup(txID); replaced {
		next := api.ID(repl)
		return &api.ReceiptReply{TxID: api.ID(txID), Status: api.StatusPending, ReplacedBy: &next}, nil
	} else if rejected {
		return &api.ReceiptReply{TxID: api.ID(txID), Status: api.StatusRejected, Error: reason}, nil
	}
	if w.pending(txID) {
		return &api.ReceiptReply{TxID: api.ID(txID), Status: api.StatusPending}, nil
	}
	return &api.ReceiptReply{TxID: api.ID(txID), Status: api.StatusUnknown}, nil
}

// pending reports whether txID waits in the pool or a processing block.
func (w *Writer) pending(txID ids.ID) bool {
	_, carried := w.chain.Processing(txID)
	return carried || w.mempool.Has(txID)
}

// decodeAccepted decodes the receipts of b's transactions into the cache
// when someone on this node waits: each of a group's waiters wakes at the
// accept and asks for the same receipt at once. It runs on the accept's
// path, before the wake: one read per transaction of the block (from
// memory when the database cache holds the receipt), where every waiter
// read it after the wake before; decoded later, the waiters would race to
// read it.
func (w *Writer) decodeAccepted(b *chain.Block) {
	if w.waiters.Load() == 0 {
		return
	}
	for _, tx := range b.Txs {
		_, _ = w.Receipt(tx.ID())
	}
}

// ErrWaitTimeout is returned when a wait outlasts the genesis bound.
var ErrWaitTimeout = errcode.New(errcode.Timeout, "wait_timeout", "writer: transaction not decided within the wait bound")

// WaitReceipt blocks until txID (or the transaction that replaced it) is
// accepted or rejected, ctx ends, or the genesis wait bound passes.
func (w *Writer) WaitReceipt(ctx context.Context, txID ids.ID) (*api.ReceiptReply, error) {
	ctx, cancel := context.WithTimeout(ctx, w.genesis.MaxWait())
	defer cancel()
	w.metrics.receiptWaits.Inc()
	defer w.metrics.receiptWaits.Dec()
	w.waiters.Add(1)
	defer w.waiters.Add(-1)
	waited := false
	// looked is the transaction whose receipt this wait read: while it
	// stays in the pool or a processing block, a wake (any block's
	// decision) needs no state read. Every way out of pending wakes.
	var looked ids.ID
	for {
		changed := w.tracker.wait()
		var rc *api.ReceiptReply
		if looked == txID && w.pending(txID) {
			rc = &api.ReceiptReply{TxID: api.ID(txID), Status: api.StatusPending}
		} else {
			var err error
			if rc, err = w.Receipt(txID); err != nil {
				return nil, err
			}
			looked = txID
		}
		switch {
		case rc.ReplacedBy != nil:
			txID = ids.ID(*rc.ReplacedBy)
			continue
		case rc.Status == api.StatusAccepted || rc.Status == api.StatusRejected:
			if waited {
				// Answered by a decision: a closed-loop client sends its
				// next request now (the committer waits for it). One asking
				// after the fact is not counted, so asking about old
				// transactions delays no group.
				w.committer.answer()
			}
			return rc, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s is %s (%w)", ErrWaitTimeout, txID, rc.Status, ctx.Err())
		}
		waited = true
	}
}
