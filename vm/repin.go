package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// repinStale runs after a block of epoch `epoch` is accepted. Pending
// transactions pinned to an older epoch can never be included any more
// (block epochs never go down), so they leave the pool. This node's own
// ones are re-signed for the new epoch where it still owns every range: a
// clean retry, never a double write, because the old one is now dead.
// Otherwise their receipt says the owner changed and names the new owner.
// Called with vm.mu held; signing happens in the background.
func (vm *VM) repinStale(epoch uint64) {
	var own []*txs.Tx
	for _, tx := range vm.mempool.Peek(vm.genesis.Mempool.MaxTxs, vm.genesis.Mempool.MaxBytes) {
		h := tx.Unsigned.Head()
		if h.Epoch >= epoch {
			continue
		}
		vm.mempool.Remove(tx.ID())
		if h.Owner == vm.cfg.NodeID {
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
			vm.repin(context.Background(), old, epoch)
		}
	}()
}

func (vm *VM) repin(ctx context.Context, old *txs.Tx, epoch uint64) {
	tx, err := vm.signAt(ctx, epoch, func(h txs.Header) txs.Unsigned {
		switch u := old.Unsigned.(type) {
		case *txs.AllocateTx:
			return &txs.AllocateTx{Header: h, Entries: u.Entries}
		case *txs.PutManifestTx:
			return &txs.PutManifestTx{Header: h, Entries: u.Entries}
		default:
			panic(fmt.Sprintf("unknown transaction kind %T", u))
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
		vm.tracker.reject(old.ID(), fmt.Sprintf("rejected: re-pinning to epoch %d failed: %v", epoch, err))
	}
}
