package writer

import (
	"context"
	"errors"
	"fmt"
	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
)

// Allocate signs an allocation of this node's own ranges, pinned to the
// membership in force, and queues it. A range this node does not own is
// refused with execute.NotOwnerError naming the owner: there is no fallback
// writer.
func (w *Writer) Allocate(ctx context.Context, entries []txs.AllocateEntry) (*txs.Tx, error) {
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.AllocateTx{Header: h, Entries: entries}
	}, (&txs.AllocateTx{Entries: entries}).Ranges())
}

// PutManifest signs one unconditional manifest of a bucket this node owns
// at once, without waiting for a group, and queues it: a PutManifestTx
// before the manifests upgrade, a ManifestTx of one entry after. A bucket
// that moves to this node at the next block waits for that block, as an
// allocation does (checkOwned).
func (w *Writer) PutManifest(ctx context.Context, m txs.Manifest) (*txs.Tx, error) {
	if err := w.checkOwned(ctx, []string{m.Bucket}); err != nil {
		return nil, err
	}
	versioned := w.ManifestsActive() == nil
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		if versioned {
			return &txs.ManifestTx{Header: h, Entries: []txs.ManifestEntry{{Manifest: m}}}
		}
		return &txs.PutManifestTx{Header: h, Entries: []txs.Manifest{m}}
	}, []string{m.Bucket})
}

// Reclaim signs the acknowledgement that a blob store reclaimed released
// chunks of buckets this node owns, and queues it.
func (w *Writer) Reclaim(ctx context.Context, chunks []txs.ChunkRef) (*txs.Tx, error) {
	if err := w.ManifestsActive(); err != nil {
		return nil, err
	}
	u := &txs.ReclaimTx{Entries: chunks}
	if err := w.checkOwned(ctx, u.Ranges()); err != nil {
		return nil, err
	}
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.ReclaimTx{Header: h, Entries: chunks}
	}, u.Ranges())
}

// ManifestsActive answers nil once the next block runs versioned manifests
// (execute.Rules.Manifests), else NotReady not_activated. Blocks only go
// up, so a write signed once it answers nil is never refused for the
// upgrade.
func (w *Writer) ManifestsActive() error { return manifestsActive(w.chain, w.genesis) }

func manifestsActive(c interface{ LastAccepted() *chain.Block }, g *config.Genesis) error {
	next := c.LastAccepted().Block.Height + 1
	if !g.Upgrades.Rules(next).Manifests {
		return fmt.Errorf("%w: versioned manifests are not activated at height %d (genesis upgrades.manifestsHeight)", execute.ErrNotActivated, next)
	}
	return nil
}

// signOwn pins a transaction of this node's own ranges to the membership in
// force,
// signs and queues it.
func (w *Writer) signOwn(ctx context.Context, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	tx, err := w.signCurrent(ctx, build, ranges)
	if err != nil {
		return nil, err
	}
	if err := w.SubmitTx(tx); err != nil {
		return nil, err
	}
	return tx, nil
}

// signCurrent signs against the membership in force, or binds the
// transaction to the block that opens the next one (pinFor), after checking
// this node owns every range.
func (w *Writer) signCurrent(ctx context.Context, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	e, blockHeight, err := w.pinFor(ctx, ranges)
	if err != nil {
		return nil, err
	}
	round := w.chain.CurrentRound()
	for attempt := 0; ; attempt++ {
		h := w.signer.header(e.Height(), e.Fingerprint(), round)
		h.BlockHeight = blockHeight
		tx, err := w.signer.sign(build(h))
		if err != nil {
			return nil, err
		}
		// A transaction identical to an applied one would be refused as a
		// replay while its caller read the old receipt as its own: never
		// hand one out (the next nonce makes it new).
		_, err = w.chain.State().Receipt(tx.ID())
		switch {
		case errors.Is(err, state.ErrNotFound):
			if blockHeight != 0 {
				w.metrics.bound.Inc()
			}
			return tx, nil
		case err != nil:
			return nil, err
		case attempt == 2:
			return nil, fmt.Errorf("writer: signed a transaction identical to applied %s three times", tx.ID())
		}
	}
}

// SubmitTx queues a signed transaction of this node (API, re-pinning) and
// pushes it to the other validators.
func (w *Writer) SubmitTx(tx *txs.Tx) error {
	if w.gossip == nil {
		return w.Admit(tx)
	}
	return w.gossip.Offer(tx)
}

// Admit queues a transaction after the cheap checks (admission.admit).
func (w *Writer) Admit(tx *txs.Tx) error { return w.admission.admit(tx) }

// Lease signs one lease operation on a range this node owns and queues it.
// What accepted state already settles for good is answered without a
// transaction: a renewal or release naming a grant that is not the range's
// (a token never comes back), a renewal of a grant that expired by the last
// accepted block's time (block times never go back), and an acquire while
// another grant holds at this node's clock (at worst a refusal the chain
// might have granted within the clock skew; the caller retries). The rest
// the block that carries it decides.
func (w *Writer) Lease(ctx context.Context, e txs.LeaseEntry) (*txs.Tx, error) {
	if err := w.activated(func(r execute.Rules) bool { return r.Leases }); err != nil {
		return nil, err
	}
	if err := w.checkOwned(ctx, []string{e.Range}); err != nil {
		return nil, err
	}
	if err := w.leaseSettled(e); err != nil {
		return nil, err
	}
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.LeaseTx{Header: h, Entries: []txs.LeaseEntry{e}}
	}, []string{e.Range})
}

// LeaseAsked is this node's clock (unix ms) when a lease request arrives:
// what LeaseAnswer measures the block that decides it against.
func (w *Writer) LeaseAsked() uint64 { return uint64(max(w.clock.Now().UnixMilli(), 0)) }

// LeaseAnswer checks grant, a grant or renewal of rangeKey the chain
// decided in transaction txID, in a block of time blockMs, for a request
// that arrived at asked (LeaseAsked). A block's time is bounded below only
// by its parent's, so a proposer may date a block back to an idle chain's
// last one, and the grant then expires earlier than its holder, counting
// TTL from its request less the chain's clock skew, believes: another
// holder may be granted the lease while it still counts it as its own.
// The owner never answers such a grant as held: one whose block is dated
// more than maxTimeSkewMs before the request arrived (no honest proposer
// dates a block so: it builds it after the request, by a clock within the
// skew), or whose expiry is already past by this node's clock, is answered
// as lost (execute.LeaseError with Backdated), naming the grant the chain
// holds. Execution is untouched: every validator decided the block alike.
func (w *Writer) LeaseAnswer(asked uint64, rangeKey string, grant state.Lease, txID ids.ID, blockMs uint64) error {
	now := w.LeaseAsked()
	skew := w.genesis.MaxTimeSkewMs
	if grant.ExpiresMs > now && blockMs+skew >= asked {
		return nil
	}
	return &execute.LeaseError{Range: rangeKey, Outcome: state.LeaseLost, TxID: txID, Lease: grant,
		Backdated: &execute.Backdated{BlockMs: blockMs, AskedMs: asked, ClockMs: now, SkewMs: skew}}
}

// leaseSettled refuses what accepted state already decides (see Lease).
func (w *Writer) leaseSettled(e txs.LeaseEntry) error {
	cur, ok, err := w.chain.State().Lease(e.Range)
	if err != nil {
		return err
	}
	last := w.chain.LastAccepted().Block.Timestamp
	now := max(uint64(w.clock.Now().UnixMilli()), last)
	refuse := func(outcome state.LeaseOutcome) error {
		le := &execute.LeaseError{Range: e.Range, Outcome: outcome}
		if ok && cur.Held(now) {
			le.Lease = cur
		}
		return le
	}
	mine := ok && cur.Holder == e.Holder && cur.Token == e.Token
	switch e.Op {
	case txs.LeaseAcquire:
		if ok && cur.Held(now) {
			return refuse(state.LeaseHeld)
		}
	case txs.LeaseRenew:
		if !mine || !cur.Held(last) {
			return refuse(state.LeaseLost)
		}
	case txs.LeaseRelease:
		if !mine {
			return refuse(state.LeaseLost)
		}
	}
	return nil
}

// activated refuses a change of execution the next block does not run yet.
func (w *Writer) activated(change func(execute.Rules) bool) error {
	next := w.chain.LastAccepted().Block.Height + 1
	if !change(w.genesis.Upgrades.Rules(next)) {
		return fmt.Errorf("%w: block %d", execute.ErrNotActivated, next)
	}
	return nil
}
