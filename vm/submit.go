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

// signCurrent signs against the membership in force (see signingEpoch)
// after checking this node owns every range.
func (vm *VM) signCurrent(ctx context.Context, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	e, err := vm.signingEpoch(ctx, ranges)
	if err != nil {
		return nil, err
	}
	round := vm.currentRound()
	for attempt := 0; ; attempt++ {
		tx, err := vm.sign(build(vm.header(e.Height(), e.Fingerprint(), round)))
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
func (vm *VM) header(pChainHeight uint64, fingerprint ids.ID, round uint64) txs.Header {
	vm.mu.Lock()
	vm.nonce++
	nonce := vm.nonce
	vm.mu.Unlock()
	return txs.Header{
		NetworkID: vm.cfg.NetworkID, ChainID: vm.cfg.ChainID, Epoch: pChainHeight,
		Fingerprint: fingerprint, Owner: vm.cfg.NodeID, Nonce: nonce, Round: round,
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

// Admission errors. Each refuses a transaction before it costs a
// validator-set lookup or a signature check.
var (
	// ErrOutsideWindow: pinned to a P-chain height below the last accepted
	// block's or above the newest this node has seen, or signed in a
	// liveness epoch too far from this node's.
	ErrOutsideWindow = errors.New("vm: transaction pinned outside this node's window")
	// ErrStale: the transaction can never be included any more (its
	// membership was superseded, or it expired).
	ErrStale = errors.New("vm: transaction can never be included any more")
	// ErrUnknownMembership: pinned to a membership this node has not
	// computed (it may lag behind the signer); gossip offers it again.
	ErrUnknownMembership = errors.New("vm: transaction pinned to a membership this node does not know")
)

// window is what admission checks a transaction's pins against: the P-chain
// heights of the last accepted block and the newest context seen, the
// liveness epoch of the last accepted block and the current one.
type window struct {
	lowHeight, highHeight uint64
	acceptedRound, round  uint64
	inForce               *execute.Epoch
}

func (vm *VM) admissionWindow() (window, error) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if !vm.haveEpoch || vm.inForce == nil {
		return window{}, fmt.Errorf("%w: no epoch open yet", ErrNotReady)
	}
	last := vm.lastAccepted.Block
	return window{
		lowHeight: last.Epoch, highHeight: vm.epoch,
		acceptedRound: vm.round(last.Timestamp),
		round:         vm.round(max(uint64(vm.cfg.Clock().UnixMilli()), last.Timestamp)),
		inForce:       vm.inForce,
	}, nil
}

// checkWindow refuses pins no honest signer produces now: a P-chain height
// outside [last accepted, newest seen] (which bounds the validator-set
// lookups gossip can cause to heights this node uses anyway), a heartbeat
// for a liveness epoch other than the previous, current or next one (one
// validator could otherwise fill every pool with heartbeats that never go
// stale), or any transaction signed more than one epoch ahead.
func (w window) check(h *txs.Header, heartbeat bool) error {
	switch {
	case h.Epoch < w.lowHeight || h.Epoch > w.highHeight:
		return fmt.Errorf("%w: P-chain height %d not in [%d, %d]", ErrOutsideWindow, h.Epoch, w.lowHeight, w.highHeight)
	case h.Round > w.round+1:
		return fmt.Errorf("%w: signed in liveness epoch %d, this node is in %d", ErrOutsideWindow, h.Round, w.round)
	case heartbeat && h.Round+1 < w.round:
		return fmt.Errorf("%w: heartbeat of liveness epoch %d, this node is in %d", ErrOutsideWindow, h.Round, w.round)
	}
	return nil
}

// dead reports whether tx can never be included in a block that extends the
// last accepted one, whose membership in force is w.inForce and whose
// liveness epoch is w.acceptedRound: block P-chain heights and epochs never
// go down, a transaction expires TxLifetimeEpochs after it was signed, and
// a superseded membership never comes back. A transaction pinned to a
// membership only a processing block has opened yet (this node lags behind
// its signer) is not dead.
func (vm *VM) dead(tx *txs.Tx, w window) bool {
	h := tx.Unsigned.Head()
	switch {
	case h.Epoch != w.inForce.Height():
		return h.Epoch < w.inForce.Height()
	case tx.IsHeartbeat():
		return h.Round < w.acceptedRound
	case h.Round+vm.genesis.TxLifetimeEpochs < w.acceptedRound:
		return true
	case h.Fingerprint == w.inForce.Fingerprint():
		return false
	}
	m, ok := vm.memberships.byFingerprint(h.Fingerprint)
	return !ok || !m.Membership().After(w.inForce.Membership())
}

// checkSigner verifies that the transaction is pinned where an honest
// signer pins now, to a membership this node knows in which the signer owns
// every range, and that a validator of its P-chain height signed it. The
// checks run cheapest first: no validator-set lookup or signature check for
// a transaction refused by its pins. The success is cached, so the block
// that later carries the tx skips the BLS check.
func (vm *VM) checkSigner(tx *txs.Tx) error {
	h := tx.Unsigned.Head()
	if h.NetworkID != vm.cfg.NetworkID || h.ChainID != vm.cfg.ChainID {
		return fmt.Errorf("%w: network %d chain %s", execute.ErrWrongChain, h.NetworkID, h.ChainID)
	}
	w, err := vm.admissionWindow()
	if err != nil {
		return err
	}
	if err := w.check(h, tx.IsHeartbeat()); err != nil {
		return err
	}
	var pinned *execute.Epoch
	if !tx.IsHeartbeat() {
		m, ok := vm.memberships.byFingerprint(h.Fingerprint)
		if !ok || m.Height() != h.Epoch {
			return fmt.Errorf("%w: fingerprint %s at P-chain height %d", ErrUnknownMembership, h.Fingerprint, h.Epoch)
		}
		pinned = m
	}
	if vm.dead(tx, w) {
		return fmt.Errorf("%w: %s", ErrStale, tx.ID())
	}
	// A relayed copy of an applied transaction would wait in the pool
	// until it expires: refuse it here (one read of accepted state).
	switch applied, err := vm.state.Accepted().Applied(h.Round, tx.SigningHash()); {
	case err != nil:
		return err
	case applied:
		return fmt.Errorf("%w: %s", execute.ErrReplay, tx.ID())
	}
	if pinned != nil {
		if err := pinned.CheckOwner(tx.Unsigned.Ranges(), h.Owner); err != nil {
			return err
		}
	}
	if vm.sigs.Verified(tx.ID()) {
		return nil
	}
	e, err := vm.epochs.Get(context.Background(), h.Epoch)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
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

// admit queues a transaction after the cheap checks: stateless rules, its
// pins, and a known signer with a valid signature (so gossip cannot fill the
// pool with junk); execution decides the rest at build time.
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
