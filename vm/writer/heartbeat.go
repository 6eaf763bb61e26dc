package writer

import (
	"context"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"go.uber.org/zap"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
)

// Heartbeat sends this validator's heartbeat for the current liveness round
// unless accepted state already records one, or one is pending. It returns
// the transaction sent, or nil when nothing was needed. A node that is not
// a validator at the current P-chain height sends nothing.
//
// Heartbeats are what keep a validator among the members ranges are pinned
// to (see execute.OpenMembership): a validator that stops sending them loses
// its ranges after K+1 rounds and regains them one round after its next
// heartbeat lands.
func (w *Writer) Heartbeat(ctx context.Context) (*txs.Tx, error) {
	h, ok := w.chain.NewestHeight()
	w.mu.Lock()
	pending := w.lastHeartbeat
	w.mu.Unlock()
	if !ok {
		return nil, w.chain.NeedMembership()
	}
	round := w.chain.CurrentRound()
	rec, known, err := w.chain.State().Liveness(w.cfg.NodeID)
	if err != nil {
		return nil, err
	}
	if known && rec.HasHeartbeat && rec.Heartbeat >= round {
		return nil, nil
	}
	if pending != nil && w.mempool.Has(pending.ID()) && pending.Unsigned.Head().PChainHeight == h && pending.Unsigned.Head().Round == round {
		return nil, nil
	}
	v, err := w.chain.ValidatorSet(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", chain.ErrNotReady, err)
	}
	if _, member := v.PublicKey(w.cfg.NodeID); !member {
		return nil, nil
	}
	tx, err := w.sign(&txs.HeartbeatTx{Header: w.header(h, ids.Empty, round)})
	if err != nil {
		return nil, err
	}
	if err := w.SubmitTx(tx); err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.lastHeartbeat = tx
	w.mu.Unlock()
	return tx, nil
}

// runHeartbeats calls Heartbeat every interval until ctx ends. Errors are
// logged, not fatal: a missed heartbeat costs availability of this node's
// ranges, never safety, and the next tick tries again.
func (w *Writer) runHeartbeats(ctx context.Context, every time.Duration) {
	defer w.background.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := w.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			// A heartbeat that does not go out costs this node its ranges
			// after K+1 rounds: an operator wants to see it.
			w.cfg.Log.Warn("heartbeat not sent", zap.Error(err))
		}
	}
}

// heartbeatInterval checks a few times per liveness round, so that a
// heartbeat lost at a round boundary is re-sent well before the round ends.
func heartbeatInterval(roundMs uint64) time.Duration {
	return min(max(time.Duration(roundMs/10)*time.Millisecond, 200*time.Millisecond), 5*time.Second)
}
