package writer

import (
	"context"
	"errors"
	"fmt"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// repinStale runs after a block that put membership e in force is accepted
// (or after a build skipped stale work). Pending transactions that can never
// be included any more (see dead) leave the pool. This node's own writes
// (allocations, manifests, reclaims, leases: every kind but the heartbeat)
// are re-signed against the membership now in force where it still owns
// every range: a clean retry, never a double write, because the old one can
// never be applied (it was signed against a membership in force, now
// superseded for good, or it expired). Otherwise their receipt says the
// owner changed and names the new owner. Heartbeats are not re-signed: the
// heartbeat loop sends the current one. Signing happens in the background.
func (w *Writer) repinStale(e *execute.Membership) {
	last := w.chain.LastAccepted().Block
	win := window{inForce: e, acceptedRound: w.chain.Round(last.Timestamp), acceptedHeight: last.Height}
	var own []*txs.Tx
	for _, tx := range w.mempool.All() {
		if !w.admission.dead(tx, win) {
			continue
		}
		w.mempool.Remove(tx.ID())
		if h := tx.Unsigned.Head(); h.Owner == w.cfg.NodeID && !tx.IsHeartbeat() {
			own = append(own, tx)
			if h.BlockHeight != 0 {
				w.metrics.boundMissed.Inc()
			}
		}
	}
	if len(own) == 0 {
		return
	}
	w.background.Add(1)
	go func() {
		defer w.background.Done()
		for _, old := range own {
			w.repin(context.Background(), old)
		}
	}()
}

func (w *Writer) repin(ctx context.Context, old *txs.Tx) {
	tx, err := w.signCurrent(ctx, old.Unsigned.WithHeader, old.Unsigned.Ranges())
	if err == nil {
		err = w.SubmitTx(tx)
	}
	var noe *execute.NotOwnerError
	switch {
	case err == nil:
		w.tracker.replace(old.ID(), tx.ID())
	case errors.As(err, &noe):
		w.tracker.reject(old.ID(), fmt.Sprintf("rejected: owner changed: range %q is owned by %s at P-chain height %d", noe.Range, noe.Owner, noe.PChainHeight))
	default:
		w.tracker.reject(old.ID(), fmt.Sprintf("rejected: re-pinning failed: %v", err))
	}
}
