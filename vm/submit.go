package vm

import (
	"context"
	"fmt"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// Allocate signs an allocation of this node's own ranges, pinned to the
// newest epoch it knows, and queues it. A range this node does not own is
// refused with execute.NotOwnerError naming the owner: there is no fallback
// writer.
func (vm *VM) Allocate(ctx context.Context, entries []txs.AllocateEntry) (*txs.Tx, error) {
	vm.mu.Lock()
	if !vm.haveEpoch {
		vm.mu.Unlock()
		return nil, fmt.Errorf("%w: no epoch known yet (no block with a P-chain context)", ErrNotReady)
	}
	epoch := vm.epoch
	vm.nonce++
	nonce := vm.nonce
	vm.mu.Unlock()

	e, err := vm.epochs.Get(ctx, epoch)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	for _, en := range entries {
		if o := e.Owner(en.Range); o != vm.cfg.NodeID {
			return nil, &execute.NotOwnerError{Range: en.Range, Signer: vm.cfg.NodeID, Owner: o, Epoch: epoch}
		}
	}
	tx, err := txs.Sign(&txs.AllocateTx{
		Header: txs.Header{
			NetworkID: vm.cfg.NetworkID, ChainID: vm.cfg.ChainID, Epoch: epoch,
			Fingerprint: e.Fingerprint(), Owner: vm.cfg.NodeID, Nonce: nonce,
		},
		Entries: entries,
	}, vm.genesis.TxLimits, vm.cfg.Signer)
	if err != nil {
		return nil, err
	}
	if err := vm.SubmitTx(tx); err != nil {
		return nil, err
	}
	return tx, nil
}

// SubmitTx queues a signed transaction (from the API or gossip) after the
// cheap stateless checks; execution decides the rest at build time.
func (vm *VM) SubmitTx(tx *txs.Tx) error {
	if err := txs.Validate(tx.Unsigned, vm.genesis.TxLimits); err != nil {
		return err
	}
	return vm.mempool.Add(tx)
}
