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
	return vm.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.AllocateTx{Header: h, Entries: entries}
	}, rangesOf(entries))
}

// PutManifest signs a manifest of a bucket this node owns and queues it.
func (vm *VM) PutManifest(ctx context.Context, m txs.Manifest) (*txs.Tx, error) {
	return vm.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.PutManifestTx{Header: h, Entries: []txs.Manifest{m}}
	}, []string{m.Bucket})
}

// signOwn pins a transaction of this node's own ranges to the current epoch,
// signs and queues it.
func (vm *VM) signOwn(ctx context.Context, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	epoch, ok := vm.CurrentEpoch()
	if !ok {
		return nil, fmt.Errorf("%w: no epoch known yet (no block with a P-chain context)", ErrNotReady)
	}
	tx, err := vm.signAt(ctx, epoch, build, ranges)
	if err != nil {
		return nil, err
	}
	if err := vm.SubmitTx(tx); err != nil {
		return nil, err
	}
	return tx, nil
}

// signAt signs at a given epoch after checking this node owns every range.
func (vm *VM) signAt(ctx context.Context, epoch uint64, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	e, err := vm.epochs.Get(ctx, epoch)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	for _, r := range ranges {
		if o := e.Owner(r); o != vm.cfg.NodeID {
			return nil, &execute.NotOwnerError{Range: r, Signer: vm.cfg.NodeID, Owner: o, Epoch: epoch}
		}
	}
	vm.mu.Lock()
	vm.nonce++
	nonce := vm.nonce
	vm.mu.Unlock()
	return txs.Sign(build(txs.Header{
		NetworkID: vm.cfg.NetworkID, ChainID: vm.cfg.ChainID, Epoch: epoch,
		Fingerprint: e.Fingerprint(), Owner: vm.cfg.NodeID, Nonce: nonce,
	}), vm.genesis.TxLimits, vm.cfg.Signer)
}

func rangesOf(entries []txs.AllocateEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Range
	}
	return out
}

// SubmitTx queues a signed transaction (from the API or gossip) after the
// cheap stateless checks; execution decides the rest at build time.
func (vm *VM) SubmitTx(tx *txs.Tx) error {
	if err := txs.Validate(tx.Unsigned, vm.genesis.TxLimits); err != nil {
		return err
	}
	return vm.mempool.Add(tx)
}
