package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// repinStale runs after a block that put membership e in force is accepted
// (or after a build skipped stale work). Pending transactions that can never
// be included any more (see dead) leave the pool. This node's own
// allocations and manifests are re-signed against the membership now in
// force where it still owns every range: a clean retry, never a double
// write, because the old one can never be applied (it was signed against a
// membership in force, now superseded for good, or it expired). Otherwise
// their receipt says the owner changed and names the new owner. Heartbeats
// are not re-signed: the heartbeat loop sends the current one. Called with
// vm.mu held; signing happens in the background.
func (vm *VM) repinStale(e *execute.Epoch) {
	last := vm.lastAccepted.Block
	w := window{inForce: e, acceptedRound: vm.round(last.Timestamp)}
	var own []*txs.Tx
	for _, tx := range vm.mempool.All() {
		if !vm.dead(tx, w) {
			continue
		}
		vm.mempool.Remove(tx.ID())
		if tx.Unsigned.Head().Owner == vm.cfg.NodeID && !tx.IsHeartbeat() {
			own = append(own, tx)
		}
	}
	if len(own) == 0 {
		return
	}
	vm.background.Add(1)
	go func() {
		defer vm.background.Done()
		for _, old := range own {
			vm.repin(context.Background(), old)
		}
	}()
}

func (vm *VM) repin(ctx context.Context, old *txs.Tx) {
	tx, err := vm.signCurrent(ctx, func(h txs.Header) txs.Unsigned {
		switch u := old.Unsigned.(type) {
		case *txs.AllocateTx:
			return &txs.AllocateTx{Header: h, Entries: u.Entries}
		case *txs.PutManifestTx:
			return &txs.PutManifestTx{Header: h, Entries: u.Entries}
		default:
			panic(fmt.Sprintf("re-pinning a %T", u))
		}
	}, old.Unsigned.Ranges())
	if err == nil {
		err = vm.SubmitTx(tx)
	}
	var noe *execute.NotOwnerError
	switch {
	case err == nil:
		vm.tracker.replace(old.ID(), tx.ID())
	case errors.As(err, &noe):
		vm.tracker.reject(old.ID(), fmt.Sprintf("rejected: owner changed: range %q is owned by %s in epoch %d", noe.Range, noe.Owner, noe.Epoch))
	default:
		vm.tracker.reject(old.ID(), fmt.Sprintf("rejected: re-pinning failed: %v", err))
	}
}
