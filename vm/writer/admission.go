package writer

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// admission decides which transactions enter this node's pool: its own and
// gossiped ones alike. It owns the budget of validator-set lookups gossip
// may cause and what is bound to coming block heights.
type admission struct {
	chain     Chain
	genesis   *config.Genesis
	networkID uint32
	chainID   ids.ID
	clock     clock.Clock
	sigs      *execute.SignatureCache
	mempool   *mempool.Mempool
	refused   *prometheus.CounterVec // refusals, by reason
	depth     prometheus.Gauge       // the pool's transactions
	lookups   lookupBudget
	// boundThrough is the highest block height a pending transaction is
	// bound to (0: none): every accept up to that height re-pins the ones
	// that missed their block.
	boundThrough atomic.Uint64
}

// noteBound remembers that a transaction bound to height h waits: the
// accept of that height re-pins it if it missed the block (accepted).
func (a *admission) noteBound(h uint64) {
	for {
		cur := a.boundThrough.Load()
		if cur >= h || a.boundThrough.CompareAndSwap(cur, h) {
			return
		}
	}
}

// accepted reports, at the accept of height, whether a transaction bound
// to this height or below may have missed its block (those bound higher
// wait for a later accept).
func (a *admission) accepted(height uint64) bool {
	bound := a.boundThrough.Load()
	if bound == 0 {
		return false
	}
	if height >= bound {
		a.boundThrough.CompareAndSwap(bound, 0)
	}
	return true
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

func (a *admission) window() (window, error) {
	newest, ok := a.chain.NewestHeight()
	inForce := a.chain.InForce()
	if !ok || inForce == nil {
		return window{}, fmt.Errorf("%w: no membership open yet", chain.ErrNotReady)
	}
	last := a.chain.LastAccepted().Block
	return window{
		lowHeight: last.PChainHeight, highHeight: newest,
		acceptedRound:  a.chain.Round(last.Timestamp),
		round:          a.chain.Round(max(uint64(a.clock.Now().UnixMilli()), last.Timestamp)),
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
func (a *admission) dead(tx *txs.Tx, win window) bool {
	h := tx.Unsigned.Head()
	switch {
	case h.BlockHeight != 0 && h.BlockHeight <= win.acceptedHeight:
		return true
	case h.PChainHeight != win.inForce.Height():
		return h.PChainHeight < win.inForce.Height()
	case tx.IsHeartbeat():
		return h.Round < win.acceptedRound
	case h.Round+a.genesis.TxLifetimeRounds < win.acceptedRound:
		return true
	case h.Fingerprint == win.inForce.Fingerprint():
		return false
	}
	m, ok := a.chain.Membership(h.Fingerprint)
	return !ok || !m.Record().After(win.inForce.Record())
}

// checkSigner verifies that the transaction is pinned where an honest
// signer pins now, to a membership this node knows in which the signer owns
// every range, and that a validator of its P-chain height signed it. The
// checks run cheapest first: no validator-set lookup or signature check for
// a transaction refused by its pins. The success is cached, so the block
// that later carries the tx skips the BLS check.
func (a *admission) checkSigner(tx *txs.Tx) error {
	h := tx.Unsigned.Head()
	if h.NetworkID != a.networkID || h.ChainID != a.chainID {
		return fmt.Errorf("%w: network %d chain %s", execute.ErrWrongChain, h.NetworkID, h.ChainID)
	}
	win, err := a.window()
	if err != nil {
		return err
	}
	if err := win.check(h, tx.IsHeartbeat()); err != nil {
		return err
	}
	var pinned *execute.Membership
	if !tx.IsHeartbeat() {
		m, ok := a.chain.Membership(h.Fingerprint)
		if !ok && h.BlockHeight != 0 {
			// Bound to the block that opens the next membership: this node
			// may not have computed it yet.
			if next, err := a.chain.Snapshot(context.Background()); err == nil && next.Fingerprint() == h.Fingerprint {
				m, ok = next, true
			}
		}
		if !ok || m.Height() != h.PChainHeight {
			return fmt.Errorf("%w: fingerprint %s at P-chain height %d", ErrUnknownMembership, h.Fingerprint, h.PChainHeight)
		}
		pinned = m
	}
	if a.dead(tx, win) {
		return fmt.Errorf("%w: %s", ErrStale, tx.ID())
	}
	// A relayed copy of an applied transaction would wait in the pool
	// until it expires: refuse it here (one read of accepted state).
	switch applied, err := a.chain.State().Applied(h.Round, tx.SigningHash()); {
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
	if a.sigs.Verified(tx.ID()) {
		return nil
	}
	if err := tx.CheckSignatureShape(); err != nil {
		return err
	}
	pk, err := a.signerKey(h, pinned, win)
	if err != nil {
		return err
	}
	if err := tx.VerifySignature(pk); err != nil {
		return err
	}
	a.sigs.Add(tx.ID())
	return nil
}

// signerKey is the signer's BLS key at the transaction's P-chain height,
// found cheapest first: in the membership it is pinned to, or in a
// validator set this node holds. Only a signer of the membership in force
// may make this node look a set up, within the lookup budget: a peer's
// junk, each at another height of the window, costs at most that.
func (a *admission) signerKey(h *txs.Header, pinned *execute.Membership, win window) (*bls.PublicKey, error) {
	var pk *bls.PublicKey
	ok := false
	switch vs, cached := a.chain.CachedValidatorSet(h.PChainHeight); {
	case pinned != nil:
		pk, ok = pinned.PublicKey(h.Owner)
	case cached:
		pk, ok = vs.PublicKey(h.Owner)
	default:
		if _, known := win.inForce.PublicKey(h.Owner); !known {
			return nil, fmt.Errorf("%w: %s is no validator of the membership in force, P-chain height %d not looked up", ErrLookupRefused, h.Owner, h.PChainHeight)
		}
		if !a.lookups.take(a.clock.Now()) {
			return nil, fmt.Errorf("%w: P-chain height %d (lookup budget spent)", ErrLookupRefused, h.PChainHeight)
		}
		vs, err := a.chain.ValidatorSet(context.Background(), h.PChainHeight)
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
func (a *admission) checkKind(tx *txs.Tx) error {
	active := manifestsActive(a.chain, a.genesis)
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

// admit queues a transaction after the cheap checks: stateless rules, its
// pins, and a known signer with a valid signature (so gossip cannot fill the
// pool with junk); execution decides the rest at build time.
func (a *admission) admit(tx *txs.Tx) error {
	if err := txs.Validate(tx.Unsigned, a.genesis.TxLimits); err != nil {
		return err
	}
	if a.mempool.Has(tx.ID()) {
		return fmt.Errorf("%w: %s", mempool.ErrDuplicate, tx.ID())
	}
	if err := a.checkKind(tx); err != nil {
		a.refused.WithLabelValues(reason(err)).Inc()
		return err
	}
	if err := a.checkSigner(tx); err != nil {
		a.refused.WithLabelValues(reason(err)).Inc()
		return err
	}
	if err := a.mempool.Add(tx); err != nil {
		return err
	}
	if h := tx.Unsigned.Head(); h.BlockHeight != 0 {
		a.noteBound(h.BlockHeight)
	}
	a.depth.Set(float64(a.mempool.Len()))
	return nil
}
