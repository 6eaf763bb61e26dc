package writer

import (
	"context"
	"errors"
	"fmt"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// Allocate signs an allocation of this node's own ranges, pinned to the
// membership in force, and queues it. A range this node does not own is
// refused with execute.NotOwnerError naming the owner: there is no fallback
// writer.
func (w *Writer) Allocate(ctx context.Context, entries []txs.AllocateEntry) (*txs.Tx, error) {
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.AllocateTx{Header: h, Entries: entries}
	}, (&txs.AllocateTx{Entries: entries}).Ranges())
}

// PutManifest signs one unconditional manifest of a bucket this node owns
// at once, without waiting for a group, and queues it: a PutManifestTx
// before the manifests upgrade, a ManifestTx of one entry after. A bucket
// that moves to this node at the next block waits for that block, as an
// allocation does (checkOwned).
func (w *Writer) PutManifest(ctx context.Context, m txs.Manifest) (*txs.Tx, error) {
	if err := w.checkOwned(ctx, []string{m.Bucket}); err != nil {
		return nil, err
	}
	versioned := w.ManifestsActive() == nil
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		if versioned {
			return &txs.ManifestTx{Header: h, Entries: []txs.ManifestEntry{{Manifest: m}}}
		}
		return &txs.PutManifestTx{Header: h, Entries: []txs.Manifest{m}}
	}, []string{m.Bucket})
}

// Reclaim signs the acknowledgement that a blob store reclaimed released
// chunks of buckets this node owns, and queues it.
func (w *Writer) Reclaim(ctx context.Context, chunks []txs.ChunkRef) (*txs.Tx, error) {
	if err := w.ManifestsActive(); err != nil {
		return nil, err
	}
	u := &txs.ReclaimTx{Entries: chunks}
	if err := w.checkOwned(ctx, u.Ranges()); err != nil {
		return nil, err
	}
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.ReclaimTx{Header: h, Entries: chunks}
	}, u.Ranges())
}

// ManifestsActive answers nil once the next block runs versioned manifests
// (execute.Rules.Manifests), else NotReady not_activated. Blocks only go
// up, so a write signed once it answers nil is never refused for the
// upgrade.
func (w *Writer) ManifestsActive() error {
	next := w.chain.LastAccepted().Block.Height + 1
	if !w.genesis.Upgrades.Rules(next).Manifests {
		return fmt.Errorf("%w: versioned manifests are not activated at height %d (genesis upgrades.manifestsHeight)", execute.ErrNotActivated, next)
	}
	return nil
}

// signOwn pins a transaction of this node's own ranges to the membership in
// force,
// signs and queues it.
func (w *Writer) signOwn(ctx context.Context, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	tx, err := w.signCurrent(ctx, build, ranges)
	if err != nil {
		return nil, err
	}
	if err := w.SubmitTx(tx); err != nil {
		return nil, err
	}
	return tx, nil
}

// signCurrent signs against the membership in force, or binds the
// transaction to the block that opens the next one (pinFor), after checking
// this node owns every range.
func (w *Writer) signCurrent(ctx context.Context, build func(txs.Header) txs.Unsigned, ranges []string) (*txs.Tx, error) {
	e, blockHeight, err := w.pinFor(ctx, ranges)
	if err != nil {
		return nil, err
	}
	round := w.chain.CurrentRound()
	for attempt := 0; ; attempt++ {
		h := w.header(e.Height(), e.Fingerprint(), round)
		h.BlockHeight = blockHeight
		tx, err := w.sign(build(h))
		if err != nil {
			return nil, err
		}
		// A transaction identical to an applied one would be refused as a
		// replay while its caller read the old receipt as its own: never
		// hand one out (the next nonce makes it new).
		_, err = w.chain.State().Receipt(tx.ID())
		switch {
		case errors.Is(err, state.ErrNotFound):
			if blockHeight != 0 {
				w.metrics.bound.Inc()
			}
			return tx, nil
		case err != nil:
			return nil, err
		case attempt == 2:
			return nil, fmt.Errorf("writer: signed a transaction identical to applied %s three times", tx.ID())
		}
	}
}

// header starts a transaction of this node with a fresh nonce.
func (w *Writer) header(pChainHeight uint64, fingerprint ids.ID, round uint64) txs.Header {
	w.mu.Lock()
	w.nonce++
	nonce := w.nonce
	w.mu.Unlock()
	return txs.Header{
		NetworkID: w.cfg.NetworkID, ChainID: w.cfg.ChainID, PChainHeight: pChainHeight,
		Fingerprint: fingerprint, Owner: w.cfg.NodeID, Nonce: nonce, Round: round,
	}
}

// sign signs u with this node's key. The signature is this node's own, so
// it enters the verified-signature cache at once: admission and this node's
// Verify of the block carrying it skip the BLS check (about a third of an
// allocate request's CPU). Every other validator still verifies it.
func (w *Writer) sign(u txs.Unsigned) (*txs.Tx, error) {
	tx, err := txs.Sign(u, w.genesis.TxLimits, w.cfg.Signer)
	if err != nil {
		return nil, err
	}
	w.sigs.Add(tx.ID())
	return tx, nil
}

// Admission errors. Each refuses a transaction before it costs a
// validator-set lookup or a signature check.
var (
	// ErrOutsideWindow: pinned to a P-chain height below the last accepted
	// block's or above the newest this node has seen, or signed in a
	// liveness round too far from this node's.
	ErrOutsideWindow = errcode.New(errcode.NotReady, "outside_window", "writer: transaction pinned outside this node's window")
	// ErrStale: the transaction can never be included any more (its
	// membership was superseded, or it expired).
	ErrStale = errcode.New(errcode.Rejected, "stale", "writer: transaction can never be included any more")
	// ErrUnknownMembership: pinned to a membership this node has not
	// computed (it may lag behind the signer); gossip offers it again.
	ErrUnknownMembership = errcode.New(errcode.NotReady, "unknown_membership", "writer: transaction pinned to a membership this node does not know")
	// ErrLookupRefused: a heartbeat pinned to a P-chain height whose
	// validator set this node holds no copy of, and which gossip may not
	// make it look up now (its signer is not in the membership in force,
	// or the lookup budget is spent); gossip offers it again.
	ErrLookupRefused = errcode.New(errcode.NotReady, "lookup_refused", "writer: transaction pinned to a P-chain height this node will not look up now")
)

// window is what admission checks a transaction's pins against: the P-chain
// heights of the last accepted block and the newest context seen, the
// liveness round of the last accepted block and the current one, and the
// membership in force.
type window struct {
	lowHeight, highHeight uint64
	acceptedRound, round  uint64
	// acceptedHeight is the last accepted block's height: a transaction
	// bound to it or below can never be included any more.
	acceptedHeight uint64
	inForce        *execute.Membership
}

func (w *Writer) admissionWindow() (window, error) {
	newest, ok := w.chain.NewestHeight()
	inForce := w.chain.InForce()
	if !ok || inForce == nil {
		return window{}, fmt.Errorf("%w: no membership open yet", chain.ErrNotReady)
	}
	last := w.chain.LastAccepted().Block
	return window{
		lowHeight: last.PChainHeight, highHeight: newest,
		acceptedRound:  w.chain.Round(last.Timestamp),
		round:          w.chain.Round(max(uint64(w.cfg.Clock().UnixMilli()), last.Timestamp)),
		acceptedHeight: last.Height,
		inForce:        inForce,
	}, nil
}

// check refuses pins no honest signer produces now: a P-chain height
// outside [last accepted, newest seen] (which bounds the validator-set
// lookups gossip can cause to heights this node uses anyway), a heartbeat
// for a liveness round other than the previous, current or next one (one
// validator could otherwise fill every pool with heartbeats that never go
// stale), or any transaction signed more than one round ahead.
func (win window) check(h *txs.Header, heartbeat bool) error {
	switch {
	case h.PChainHeight < win.lowHeight || h.PChainHeight > win.highHeight:
		return fmt.Errorf("%w: P-chain height %d not in [%d, %d]", ErrOutsideWindow, h.PChainHeight, win.lowHeight, win.highHeight)
	case h.Round > win.round+1:
		return fmt.Errorf("%w: signed in liveness round %d, this node is in %d", ErrOutsideWindow, h.Round, win.round)
	case heartbeat && h.Round+1 < win.round:
		return fmt.Errorf("%w: heartbeat of liveness round %d, this node is in %d", ErrOutsideWindow, h.Round, win.round)
	case h.BlockHeight > win.acceptedHeight+boundAhead:
		return fmt.Errorf("%w: bound to block height %d, this node accepted %d", ErrOutsideWindow, h.BlockHeight, win.acceptedHeight)
	}
	return nil
}

// boundAhead is how far above this node's last accepted block a
// transaction may be bound (txs.Header.BlockHeight): an honest owner binds
// to the height after its own last accepted block, and this node may not
// have accepted that block yet. Higher ones would wait in the pool for
// heights nobody binds to.
const boundAhead = 2

// dead reports whether tx can never be included in a block that extends the
// last accepted one, whose membership in force is win.inForce and whose
// liveness round is win.acceptedRound: block P-chain heights and rounds
// never go down, a transaction expires TxLifetimeRounds after it was signed,
// and a superseded membership never comes back. A transaction pinned to a
// membership only a processing block has opened yet (this node lags behind
// its signer) is not dead.
func (w *Writer) dead(tx *txs.Tx, win window) bool {
	h := tx.Unsigned.Head()
	switch {
	case h.BlockHeight != 0 && h.BlockHeight <= win.acceptedHeight:
		return true
	case h.PChainHeight != win.inForce.Height():
		return h.PChainHeight < win.inForce.Height()
	case tx.IsHeartbeat():
		return h.Round < win.acceptedRound
	case h.Round+w.genesis.TxLifetimeRounds < win.acceptedRound:
		return true
	case h.Fingerprint == win.inForce.Fingerprint():
		return false
	}
	m, ok := w.chain.Membership(h.Fingerprint)
	return !ok || !m.Record().After(win.inForce.Record())
}

// checkSigner verifies that the transaction is pinned where an honest
// signer pins now, to a membership this node knows in which the signer owns
// every range, and that a validator of its P-chain height signed it. The
// checks run cheapest first: no validator-set lookup or signature check for
// a transaction refused by its pins. The success is cached, so the block
// that later carries the tx skips the BLS check.
func (w *Writer) checkSigner(tx *txs.Tx) error {
	h := tx.Unsigned.Head()
	if h.NetworkID != w.cfg.NetworkID || h.ChainID != w.cfg.ChainID {
		return fmt.Errorf("%w: network %d chain %s", execute.ErrWrongChain, h.NetworkID, h.ChainID)
	}
	win, err := w.admissionWindow()
	if err != nil {
		return err
	}
	if err := win.check(h, tx.IsHeartbeat()); err != nil {
		return err
	}
	var pinned *execute.Membership
	if !tx.IsHeartbeat() {
		m, ok := w.chain.Membership(h.Fingerprint)
		if !ok && h.BlockHeight != 0 {
			// Bound to the block that opens the next membership: this node
			// may not have computed it yet.
			if next, err := w.chain.Snapshot(context.Background()); err == nil && next.Fingerprint() == h.Fingerprint {
				m, ok = next, true
			}
		}
		if !ok || m.Height() != h.PChainHeight {
			return fmt.Errorf("%w: fingerprint %s at P-chain height %d", ErrUnknownMembership, h.Fingerprint, h.PChainHeight)
		}
		pinned = m
	}
	if w.dead(tx, win) {
		return fmt.Errorf("%w: %s", ErrStale, tx.ID())
	}
	// A relayed copy of an applied transaction would wait in the pool
	// until it expires: refuse it here (one read of accepted state).
	switch applied, err := w.chain.State().Applied(h.Round, tx.SigningHash()); {
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
	if w.sigs.Verified(tx.ID()) {
		return nil
	}
	if err := tx.CheckSignatureShape(); err != nil {
		return err
	}
	pk, err := w.signerKey(h, pinned, win)
	if err != nil {
		return err
	}
	if err := tx.VerifySignature(pk); err != nil {
		return err
	}
	w.sigs.Add(tx.ID())
	return nil
}

// signerKey is the signer's BLS key at the transaction's P-chain height,
// found cheapest first: in the membership it is pinned to, or in a
// validator set this node holds. Only a signer of the membership in force
// may make this node look a set up, within the lookup budget: a peer's
// junk, each at another height of the window, costs at most that.
func (w *Writer) signerKey(h *txs.Header, pinned *execute.Membership, win window) (*bls.PublicKey, error) {
	var pk *bls.PublicKey
	ok := false
	switch vs, cached := w.chain.CachedValidatorSet(h.PChainHeight); {
	case pinned != nil:
		pk, ok = pinned.PublicKey(h.Owner)
	case cached:
		pk, ok = vs.PublicKey(h.Owner)
	default:
		if _, known := win.inForce.PublicKey(h.Owner); !known {
			return nil, fmt.Errorf("%w: %s is no validator of the membership in force, P-chain height %d not looked up", ErrLookupRefused, h.Owner, h.PChainHeight)
		}
		if !w.lookups.take(w.cfg.Clock()) {
			return nil, fmt.Errorf("%w: P-chain height %d (lookup budget spent)", ErrLookupRefused, h.PChainHeight)
		}
		vs, err := w.chain.ValidatorSet(context.Background(), h.PChainHeight)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", chain.ErrNotReady, err)
		}
		pk, ok = vs.PublicKey(h.Owner)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", execute.ErrUnknownSigner, h.Owner)
	}
	return pk, nil
}

// checkKind refuses a kind the next block's rules refuse: a versioned
// manifest write or reclaim before the manifests upgrade, a PutManifestTx
// after it. Block heights only go up, so either can never be included.
func (w *Writer) checkKind(tx *txs.Tx) error {
	active := w.ManifestsActive()
	switch tx.Unsigned.(type) {
	case *txs.ManifestTx, *txs.ReclaimTx:
		return active
	case *txs.PutManifestTx:
		if active == nil {
			return fmt.Errorf("%w: %s", execute.ErrSuperseded, tx.ID())
		}
	}
	return nil
}

// SubmitTx queues a signed transaction of this node (API, re-pinning) and
// pushes it to the other validators.
func (w *Writer) SubmitTx(tx *txs.Tx) error {
	if w.gossip == nil {
		return w.Admit(tx)
	}
	return w.gossip.Offer(tx)
}

// Admit queues a transaction after the cheap checks: stateless rules, its
// pins, and a known signer with a valid signature (so gossip cannot fill the
// pool with junk); execution decides the rest at build time.
func (w *Writer) Admit(tx *txs.Tx) error {
	if err := txs.Validate(tx.Unsigned, w.genesis.TxLimits); err != nil {
		return err
	}
	if w.mempool.Has(tx.ID()) {
		return fmt.Errorf("%w: %s", mempool.ErrDuplicate, tx.ID())
	}
	if err := w.checkKind(tx); err != nil {
		w.metrics.refused.WithLabelValues(reason(err)).Inc()
		return err
	}
	if err := w.checkSigner(tx); err != nil {
		w.metrics.refused.WithLabelValues(reason(err)).Inc()
		return err
	}
	if err := w.mempool.Add(tx); err != nil {
		return err
	}
	if h := tx.Unsigned.Head(); h.BlockHeight != 0 {
		w.noteBound(h.BlockHeight)
	}
	w.metrics.mempoolDepth.Set(float64(w.mempool.Len()))
	return nil
}

// Lease signs one lease operation on a range this node owns and queues it.
// What accepted state already settles for good is answered without a
// transaction: a renewal or release naming a grant that is not the range's
// (a token never comes back), a renewal of a grant that expired by the last
// accepted block's time (block times never go back), and an acquire while
// another grant holds at this node's clock (at worst a refusal the chain
// might have granted within the clock skew; the caller retries). The rest
// the block that carries it decides.
func (w *Writer) Lease(ctx context.Context, e txs.LeaseEntry) (*txs.Tx, error) {
	if err := w.activated(func(r execute.Rules) bool { return r.Leases }); err != nil {
		return nil, err
	}
	if err := w.checkOwned(ctx, []string{e.Range}); err != nil {
		return nil, err
	}
	if err := w.leaseSettled(e); err != nil {
		return nil, err
	}
	return w.signOwn(ctx, func(h txs.Header) txs.Unsigned {
		return &txs.LeaseTx{Header: h, Entries: []txs.LeaseEntry{e}}
	}, []string{e.Range})
}

// leaseSettled refuses what accepted state already decides (see Lease).
func (w *Writer) leaseSettled(e txs.LeaseEntry) error {
	cur, ok, err := w.chain.State().Lease(e.Range)
	if err != nil {
		return err
	}
	last := w.chain.LastAccepted().Block.Timestamp
	now := max(uint64(w.cfg.Clock().UnixMilli()), last)
	refuse := func(outcome state.LeaseOutcome) error {
		le := &execute.LeaseError{Range: e.Range, Outcome: outcome}
		if ok && cur.Held(now) {
			le.Lease = cur
		}
		return le
	}
	mine := ok && cur.Holder == e.Holder && cur.Token == e.Token
	switch e.Op {
	case txs.LeaseAcquire:
		if ok && cur.Held(now) {
			return refuse(state.LeaseHeld)
		}
	case txs.LeaseRenew:
		if !mine || !cur.Held(last) {
			return refuse(state.LeaseLost)
		}
	case txs.LeaseRelease:
		if !mine {
			return refuse(state.LeaseLost)
		}
	}
	return nil
}

// activated refuses a change of execution the next block does not run yet.
func (w *Writer) activated(change func(execute.Rules) bool) error {
	next := w.chain.LastAccepted().Block.Height + 1
	if !change(w.genesis.Upgrades.Rules(next)) {
		return fmt.Errorf("%w: block %d", execute.ErrNotActivated, next)
	}
	return nil
}
