package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// Allocate signs an allocation of this node's own ranges, pinned to the
// newest epoch it knows, and queues it. A range this node does not own is
// refused with execute.NotOwnerError naming the owner: there is no fallback
// writer.
func (vm *VM) Allocate(ctx context.Context, entries []txs.AllocateEntry) (*txs.Tx, error) {
	return vm.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.AllocateTx{Header: h, Entries: entries}
	}, (&txs.AllocateTx{Entries: entries}).Ranges())
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
	tx, err := vm.signCurrent(ctx, build, ranges)
	if err != nil {
		return nil, err
	}
	if err := vm.SubmitTx(tx); err != nil {
		return nil, err
	}
	return tx, nil
}

// signCurrent signs against the current epoch (see Snapshot) after
// checking this node owns every range there.
func (vm *VM) signCurrent(ctx context.Context, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	e, err := vm.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.CheckOwner(ranges, vm.cfg.NodeID); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		tx, err := vm.sign(build(vm.header(e.Height(), e.Fingerprint())))
		if err != nil {
			return nil, err
		}
		// A transaction identical to an applied one would be refused as a
		// replay while its caller read the old receipt as its own: never
		// hand one out (the next nonce makes it new).
		_, err = vm.state.Accepted().Receipt(tx.ID())
		switch {
		case errors.Is(err, state.ErrNotFound):
			return tx, nil
		case err != nil:
			return nil, err
		case attempt == 2:
			return nil, fmt.Errorf("vm: signed a transaction identical to applied %s three times", tx.ID())
		}
	}
}

// header starts a transaction of this node with a fresh nonce.
func (vm *VM) header(pChainHeight uint64, fingerprint ids.ID) txs.Header {
	vm.mu.Lock()
	vm.nonce++
	nonce := vm.nonce
	vm.mu.Unlock()
	return txs.Header{
		NetworkID: vm.cfg.NetworkID, ChainID: vm.cfg.ChainID, Epoch: pChainHeight,
		Fingerprint: fingerprint, Owner: vm.cfg.NodeID, Nonce: nonce,
	}
}

// sign signs u with this node's key. The signature is this node's own, so
// it enters the verified-signature cache at once: admission and this node's
// Verify of the block carrying it skip the BLS check (about a third of an
// allocate request's CPU). Every other validator still verifies it.
func (vm *VM) sign(u txs.Unsigned) (*txs.Tx, error) {
	tx, err := txs.Sign(u, vm.genesis.TxLimits, vm.cfg.Signer)
	if err != nil {
		return nil, err
	}
	vm.sigs.Add(tx.ID())
	return tx, nil
}

// checkSigner verifies that a validator of the tx's P-chain height signed
// it and, when this node knows the membership the tx is pinned to, that the
// signer owns every range there. (A tx pinned to a membership this node has
// not computed yet, say at an epoch boundary, is admitted on its signature:
// only validators can sign, and execution decides the rest.) The success
// is cached, so the block that later carries the tx skips the BLS check.
func (vm *VM) checkSigner(tx *txs.Tx) error {
	h := tx.Unsigned.Head()
	if h.NetworkID != vm.cfg.NetworkID || h.ChainID != vm.cfg.ChainID {
		return fmt.Errorf("%w: network %d chain %s", execute.ErrWrongChain, h.NetworkID, h.ChainID)
	}
	if vm.sigs.Verified(tx.ID()) {
		return nil
	}
	e, err := vm.epochs.Get(context.Background(), h.Epoch)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	if m, ok := vm.memberships.byFingerprint(h.Fingerprint); ok && m.Height() == h.Epoch {
		if err := m.CheckOwner(tx.Unsigned.Ranges(), h.Owner); err != nil {
			return err
		}
	}
	pk, ok := e.PublicKey(h.Owner)
	if !ok {
		return fmt.Errorf("%w: %s", execute.ErrUnknownSigner, h.Owner)
	}
	if err := tx.VerifySignature(pk); err != nil {
		return err
	}
	vm.sigs.Add(tx.ID())
	return nil
}

// SubmitTx queues a signed transaction of this node (API, re-pinning) and
// pushes it to the other validators.
func (vm *VM) SubmitTx(tx *txs.Tx) error {
	if vm.gossip == nil {
		return vm.admit(tx)
	}
	if err := vm.gossip.set.Add(tx); err != nil {
		return err
	}
	vm.gossip.push.Add(tx)
	return nil
}

// admit queues a transaction after the cheap checks: stateless rules and a
// known signer with a valid signature (so gossip cannot fill the pool with
// junk); execution decides the rest at build time.
func (vm *VM) admit(tx *txs.Tx) error {
	if err := txs.Validate(tx.Unsigned, vm.genesis.TxLimits); err != nil {
		return err
	}
	if vm.mempool.Has(tx.ID()) {
		return fmt.Errorf("%w: %s", mempool.ErrDuplicate, tx.ID())
	}
	if err := vm.checkSigner(tx); err != nil {
		vm.metrics.rejects.WithLabelValues(reasonOf(err)).Inc()
		return err
	}
	if err := vm.mempool.Add(tx); err != nil {
		return err
	}
	vm.metrics.mempoolDepth.Set(float64(vm.mempool.Len()))
	return nil
}
