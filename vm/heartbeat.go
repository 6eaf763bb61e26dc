package vm

import (
	"context"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"go.uber.org/zap"

	"github.com/s-chain/schain/txs"
)

// Heartbeat sends this validator's heartbeat for the current liveness epoch
// unless accepted state already records one, or one is pending. It returns
// the transaction sent, or nil when nothing was needed. A node that is not
// a validator at the current P-chain height sends nothing.
//
// Heartbeats are what keep a validator among the members ranges are pinned
// to (see execute.OpenMembership): a validator that stops sending them loses
// its ranges after K+1 epochs and regains them one epoch after its next
// heartbeat lands.
func (vm *VM) Heartbeat(ctx context.Context) (*txs.Tx, error) {
	vm.mu.Lock()
	h, ok := vm.epoch, vm.haveEpoch
	pending := vm.lastHeartbeat
	vm.mu.Unlock()
	if !ok {
		return nil, vm.errNoEpoch()
	}
	round := vm.currentRound()
	rec, known, err := vm.state.Accepted().Liveness(vm.cfg.NodeID)
	if err != nil {
		return nil, err
	}
	if known && rec.HasHeartbeat && rec.Heartbeat >= round {
		return nil, nil
	}
	if pending != nil && vm.mempool.Has(pending.ID()) && pending.Unsigned.Head().Epoch == h && pending.Unsigned.Head().Round == round {
		return nil, nil
	}
	v, err := vm.epochs.Get(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	if _, member := v.PublicKey(vm.cfg.NodeID); !member {
		return nil, nil
	}
	tx, err := vm.sign(&txs.HeartbeatTx{Header: vm.header(h, ids.Empty, round)})
	if err != nil {
		return nil, err
	}
	if err := vm.SubmitTx(tx); err != nil {
		return nil, err
	}
	vm.mu.Lock()
	vm.lastHeartbeat = tx
	vm.mu.Unlock()
	return tx, nil
}

// runHeartbeats calls Heartbeat every interval until ctx ends. Errors are
// logged, not fatal: a missed heartbeat costs availability of this node's
// ranges, never safety, and the next tick tries again.
func (vm *VM) runHeartbeats(ctx context.Context, every time.Duration) {
	defer vm.background.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := vm.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			// A heartbeat that does not go out costs this node its ranges
			// after K+1 epochs: an operator wants to see it.
			vm.cfg.Log.Warn("heartbeat not sent", zap.Error(err))
		}
	}
}

// heartbeatInterval checks a few times per liveness epoch, so that a
// heartbeat lost at an epoch boundary is re-sent well before the epoch ends.
func heartbeatInterval(epochMs uint64) time.Duration {
	return min(max(time.Duration(epochMs/10)*time.Millisecond, 200*time.Millisecond), 5*time.Second)
}
