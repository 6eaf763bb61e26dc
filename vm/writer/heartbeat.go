package writer

import (
	"context"
	"errors"
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
	return w.heartbeat(ctx, w.chain.CurrentRound())
}

// HeartbeatAhead sends the next liveness round's heartbeat ahead of time
// (config.Genesis.HeartbeatLead before the round starts): it waits in every pool until a
// block of that round can carry it, so the round's first block carries the
// heartbeats of every live validator. A heartbeat sent at the start of the
// round instead lands only in a block built after it, and a round can pass
// without one (a round of a few seconds is no longer than the proposer VM's
// 5 s slot of a dead validator): with K=1, a validator whose heartbeat missed
// its round drops out while alive.
func (w *Writer) HeartbeatAhead(ctx context.Context) (*txs.Tx, error) {
	return w.heartbeat(ctx, w.chain.CurrentRound()+1)
}

func (w *Writer) heartbeat(ctx context.Context, round uint64) (*txs.Tx, error) {
	h, ok := w.chain.NewestHeight()
	if !ok {
		return nil, w.chain.NeedMembership()
	}
	rec, known, err := w.chain.State().Liveness(w.cfg.NodeID)
	if err != nil {
		return nil, err
	}
	if known && rec.HasHeartbeat && rec.Heartbeat >= round {
		return nil, nil
	}
	w.mu.Lock()
	pending := w.heartbeats[round]
	w.mu.Unlock()
	if pending != nil && w.mempool.Has(pending.ID()) && pending.Unsigned.Head().PChainHeight == h {
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
	w.heartbeats[round] = tx
	for r := range w.heartbeats {
		if r+1 < round {
			delete(w.heartbeats, r) // only the previous, current and next rounds can still land
		}
	}
	w.mu.Unlock()
	return tx, nil
}

// runHeartbeats keeps this validator's heartbeats going until ctx ends:
// every interval it sends the current round's if it has not landed, and
// lead before each round starts it sends that round's. Errors are logged,
// not fatal: a missed heartbeat costs availability of this node's ranges,
// never safety, and the next tick tries again.
func (w *Writer) runHeartbeats(ctx context.Context) {
	defer w.background.Done()
	every, lead := heartbeatInterval(w.genesis.RoundDurationMs), w.genesis.HeartbeatLead()
	timer := time.NewTimer(max(every, firstHeartbeat))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		_, err := w.Heartbeat(ctx)
		untilNext := w.chain.UntilNextRound()
		if err == nil && untilNext <= lead {
			_, err = w.HeartbeatAhead(ctx)
		}
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, chain.ErrNotReady) && w.chain.InForce() == nil:
			// A new chain opens its first membership within a block or
			// two; until then there is nothing to miss.
			w.cfg.Log.Debug("heartbeat waits for the first membership", zap.Error(err))
		default:
			// A heartbeat that does not go out costs this node its ranges
			// after K+1 rounds: an operator wants to see it.
			w.cfg.Log.Warn("heartbeat not sent", zap.Error(err))
		}
		next := every
		if untilNext > lead {
			next = min(next, untilNext-lead)
		}
		timer.Reset(next)
	}
}

// firstHeartbeat is the least time between a start and the first heartbeat.
// Before the chain's first membership, a heartbeat asks for the opening
// blocks, and a node started alone for a moment must not build them: the
// local network's bootstrap node runs the chain briefly with sybil
// protection off before it restarts with its peers, and opening blocks it
// accepted alone would fork it from them.
const firstHeartbeat = 3 * time.Second

// heartbeatInterval checks a few times per liveness round, so that a
// heartbeat lost at a round boundary is re-sent well before the round ends.
func heartbeatInterval(roundMs uint64) time.Duration {
	return min(max(time.Duration(roundMs/10)*time.Millisecond, 200*time.Millisecond), 5*time.Second)
}
