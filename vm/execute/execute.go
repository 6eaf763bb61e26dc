// Package execute applies S-Chain transactions to state: the pure rules
// every validator runs in Verify and the builder runs when it packs a block.
//
// Execution reads a state.Reader and returns state.Changes or a named error;
// it never writes, never reads a clock, never does I/O and uses no floats, so
// every honest node reaches the same verdict and the same changes.
package execute

import (
	"fmt"
	"math/bits"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
)

var (
	ErrWrongNetwork      = errcode.New(errcode.Rejected, "wrong_network", "execute: transaction is for another network")
	ErrWrongChain        = errcode.New(errcode.Rejected, "wrong_chain", "execute: transaction is for another chain")
	ErrWrongPChainHeight = errcode.New(errcode.Rejected, "wrong_pchain_height", "execute: transaction pinned to another P-chain height than the block's")
	ErrWrongFingerprint  = errcode.New(errcode.Rejected, "wrong_fingerprint", "execute: fingerprint differs from the block's membership")
	ErrNotOwner          = errcode.New(errcode.NotOwner, "not_owner", "execute: signer does not own the range")
	ErrUnknownSigner     = errcode.New(errcode.Rejected, "unknown_signer", "execute: signer has no registered BLS key at this P-chain height")
	ErrReplay            = errcode.New(errcode.Rejected, "replay", "execute: transaction already applied")
	ErrCounterOverflow   = errcode.New(errcode.Rejected, "counter_overflow", "execute: range counter would overflow")
	ErrUnallocatedChunk  = errcode.New(errcode.Rejected, "unallocated_chunk", "execute: manifest chunk id was never allocated")
	ErrNoMembership      = errcode.New(errcode.NotReady, "block_without_membership", "execute: a block without a P-chain height carries no transactions")
	// ErrExpired: a transaction is valid for Liveness.TxLifetime liveness
	// rounds after the one it was signed in, which bounds the replay index.
	ErrExpired = errcode.New(errcode.Rejected, "expired", "execute: transaction expired (signed too many liveness rounds before the block)")
	// ErrNotYetValid: signed in a liveness round more than one after the
	// block's (one covers clocks that differ within the skew bound).
	ErrNotYetValid = errcode.New(errcode.Rejected, "not_yet_valid", "execute: transaction signed in a later liveness round than the block's")
	// ErrWrongBlockHeight: a transaction bound to a block height
	// (txs.Header.BlockHeight) is valid in a block of that height only.
	ErrWrongBlockHeight = errcode.New(errcode.Rejected, "wrong_block_height", "execute: transaction bound to another block height than the block's")
)

// DefaultReplayPruneLimit is how many replay entries one block deletes at
// most when Context.ReplayPruneLimit is zero.
const DefaultReplayPruneLimit = 4096

// NotOwnerError names the range and its real owner, so an API can hand the
// client a routing hint.
type NotOwnerError struct {
	Range  string
	Signer ids.NodeID
	Owner  ids.NodeID
	// PChainHeight of the membership that names Owner.
	PChainHeight uint64
}

func (e *NotOwnerError) Error() string {
	return fmt.Sprintf("%s: range %q is owned by %s at P-chain height %d, not %s", ErrNotOwner, e.Range, e.Owner, e.PChainHeight, e.Signer)
}

func (*NotOwnerError) Is(target error) bool {
	return target == ErrNotOwner || target == errcode.NotOwner.Class()
}

// Code and Reason are the API identity of ErrNotOwner.
func (*NotOwnerError) Code() errcode.Code { return errcode.NotOwner }
func (*NotOwnerError) Reason() string     { return ErrNotOwner.Reason() }

// Context is what a block fixes for all of its transactions.
type Context struct {
	NetworkID uint32
	ChainID   ids.ID
	Limits    txs.Limits
	// Validators is the P-chain set at the block's P-chain height, Round
	// the block's liveness round and Liveness the genesis rule: Block turns
	// them into Membership. Nil for a block without a P-chain context, which
	// carries no transactions.
	Validators *ValidatorSet
	Round      uint64
	Liveness   Liveness
	// Rules are the scheduled changes of execution in force at Height.
	Rules Rules
	// Restrict, if set, builds (or finds cached) the membership of a frozen
	// record; nil means Validators.Restrict.
	Restrict func(v *ValidatorSet, m *state.Membership) (*Membership, error)
	// MembershipChanged is set by Block (Open) when the block puts another
	// membership in force than its parent's.
	MembershipChanged bool
	// Membership is what transactions are checked against: the one Block
	// opened or found. Callers that pin against a plain set without
	// liveness (benchmarks, tools) set it directly (ValidatorSet.All) and
	// leave Validators nil.
	Membership *Membership
	// Height is the block height, recorded in receipts.
	Height uint64
	// Time is the block's timestamp (unix ms): the clock leases expire by.
	Time uint64
	// ReplayPruneLimit bounds the expired replay entries one block deletes
	// (0: DefaultReplayPruneLimit). It must exceed the transactions one
	// block can carry, so that the backlog of a burst only shrinks.
	ReplayPruneLimit int
	// Signatures, if set, remembers verified signatures by tx ID.
	Signatures *SignatureCache
}

// Tx checks tx against the block context and state r and returns what it
// writes. r must already include the effects of earlier transactions of the
// same block.
func Tx(r state.Reader, c *Context, tx *txs.Tx) (*state.Changes, error) {
	h := tx.Unsigned.Head()
	switch {
	case c.Membership == nil:
		return nil, ErrNoMembership
	case h.NetworkID != c.NetworkID:
		return nil, fmt.Errorf("%w: %d, chain runs on %d", ErrWrongNetwork, h.NetworkID, c.NetworkID)
	case h.ChainID != c.ChainID:
		return nil, fmt.Errorf("%w: %s", ErrWrongChain, h.ChainID)
	case h.PChainHeight != c.Membership.Height():
		return nil, fmt.Errorf("%w: tx pinned to %d, block at %d", ErrWrongPChainHeight, h.PChainHeight, c.Membership.Height())
	case h.BlockHeight != 0 && h.BlockHeight != c.Height:
		return nil, fmt.Errorf("%w: tx bound to %d, block at %d", ErrWrongBlockHeight, h.BlockHeight, c.Height)
	}
	if tx.IsHeartbeat() {
		// A heartbeat is pinned to a liveness round, not to a membership:
		// a validator outside the members must be able to send one.
		if h.Round != c.Round {
			return nil, fmt.Errorf("%w: heartbeat of %d, block in %d", ErrWrongRound, h.Round, c.Round)
		}
	} else {
		switch {
		case h.Round > c.Round+1:
			return nil, fmt.Errorf("%w: signed in %d, block in %d", ErrNotYetValid, h.Round, c.Round)
		case c.Round-min(c.Round, c.Liveness.TxLifetime) > h.Round:
			return nil, fmt.Errorf("%w: signed in %d, block in %d, lifetime %d", ErrExpired, h.Round, c.Round, c.Liveness.TxLifetime)
		case h.Fingerprint != c.Membership.Fingerprint():
			return nil, fmt.Errorf("%w: tx %s, block %s", ErrWrongFingerprint, h.Fingerprint, c.Membership.Fingerprint())
		}
	}
	if err := txs.Validate(tx.Unsigned, c.Limits); err != nil {
		return nil, err
	}
	if _, lease := tx.Unsigned.(*txs.LeaseTx); lease && !c.Rules.Leases {
		return nil, fmt.Errorf("%w: leases, block %d", ErrNotActivated, c.Height)
	}
	if err := c.Membership.CheckOwner(tx.Unsigned.Ranges(), h.Owner); err != nil {
		return nil, err
	}
	applied, err := r.Applied(h.Round, tx.SigningHash())
	if err != nil {
		return nil, err
	}
	if applied {
		return nil, fmt.Errorf("%w: %s", ErrReplay, tx.ID())
	}
	if err := verifySignature(c, tx); err != nil {
		return nil, err
	}
	e := &executor{r: r, c: c, tx: tx, out: &state.Changes{
		Round:       h.Round,
		SigningHash: tx.SigningHash(),
		Receipt:     &state.Receipt{TxID: tx.ID(), Height: c.Height, Kind: tx.Kind()},
	}}
	if err := tx.Unsigned.Visit(e); err != nil {
		return nil, err
	}
	return e.out, nil
}

func verifySignature(c *Context, tx *txs.Tx) error {
	if c.Signatures.Verified(tx.ID()) {
		return nil
	}
	owner := tx.Unsigned.Head().Owner
	pk, ok := c.Membership.PublicKey(owner)
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownSigner, owner)
	}
	if err := tx.VerifySignature(pk); err != nil {
		return err
	}
	c.Signatures.Add(tx.ID())
	return nil
}

var _ txs.Visitor = (*executor)(nil)

type executor struct {
	r   state.Reader
	c   *Context
	tx  *txs.Tx
	out *state.Changes
	// next overlays counters this transaction already moved.
	next map[string]uint64
}

func (e *executor) counter(rangeKey string) (uint64, error) {
	if v, ok := e.next[rangeKey]; ok {
		return v, nil
	}
	return e.r.Counter(rangeKey)
}

func (e *executor) Allocate(t *txs.AllocateTx) error {
	e.next = make(map[string]uint64, len(t.Entries))
	for i, en := range t.Entries {
		cur, err := e.counter(en.Range)
		if err != nil {
			return err
		}
		base := max(cur, en.Floor)
		end, carry := bits.Add64(base, en.Count, 0)
		if carry != 0 {
			return fmt.Errorf("entry %d: %w: range %q at %d + %d", i, ErrCounterOverflow, en.Range, base, en.Count)
		}
		e.next[en.Range] = end
		e.out.Counters = append(e.out.Counters, state.CounterUpdate{Range: en.Range, Next: end})
		e.out.Receipt.Entries = append(e.out.Receipt.Entries, state.ReceiptEntry{Range: en.Range, Base: base, Count: en.Count})
	}
	return nil
}

// Heartbeat records that the signer was alive in the block's liveness round;
// the signer's key was checked against the whole P-chain set.
func (e *executor) Heartbeat(t *txs.HeartbeatTx) error {
	rec, ok, err := e.r.Liveness(t.Owner)
	if err != nil {
		return err
	}
	if !ok {
		rec.FirstSeen = t.Round // unreachable: opening the membership records every validator
	}
	if rec.HasHeartbeat && rec.Heartbeat >= t.Round {
		return fmt.Errorf("%w: %s in %d", ErrDuplicateHeartbeat, t.Owner, t.Round)
	}
	rec.Heartbeat, rec.HasHeartbeat = t.Round, true
	e.out.Liveness = append(e.out.Liveness, state.LivenessUpdate{NodeID: t.Owner, Record: rec})
	return nil
}

func (e *executor) PutManifest(t *txs.PutManifestTx) error {
	if e.c.Rules.Manifests {
		return fmt.Errorf("%w: at height %d", ErrSuperseded, e.c.Height)
	}
	for i := range t.Entries {
		m := &t.Entries[i]
		for j, ch := range m.Chunks {
			next, err := e.counter(ch.Range)
			if err != nil {
				return err
			}
			if ch.ID >= next {
				return fmt.Errorf("entry %d chunk %d: %w: %s#%d (next unissued id is %d)", i, j, ErrUnallocatedChunk, ch.Range, ch.ID, next)
			}
		}
		e.out.Manifests = append(e.out.Manifests, m)
		e.out.Receipt.Entries = append(e.out.Receipt.Entries, state.ReceiptEntry{Bucket: m.Bucket, Key: m.Key, Deleted: m.Deleted})
	}
	return nil
}

// Block applies a block's transactions to its layer in order, after
// opening or finding the block's membership when c.Validators is set (which
// sets c.Membership) and pruning replay entries that expired. Any invalid
// transaction invalidates the block; the error names its index. The caller
// seals the layer afterwards.
func Block(l *state.Layer, c *Context, blockTxs []*txs.Tx) error {
	if err := Begin(l, c); err != nil {
		return err
	}
	for i, tx := range blockTxs {
		ch, err := Tx(l, c, tx)
		if err != nil {
			return fmt.Errorf("tx %d (%s): %w", i, tx.ID(), err)
		}
		if err := l.Apply(ch); err != nil {
			return fmt.Errorf("tx %d (%s): %w", i, tx.ID(), err)
		}
	}
	return nil
}

// Begin is what a block does before its transactions: it opens or finds the
// block's membership (Open) and prunes expired replay entries. Builders call
// it before they pick transactions with Tx, so that a block they build and
// the same block verified elsewhere execute identically, transactions or
// none.
func Begin(l *state.Layer, c *Context) error {
	if err := Open(l, c); err != nil {
		return err
	}
	limit := c.ReplayPruneLimit
	if limit == 0 {
		limit = DefaultReplayPruneLimit
	}
	_, err := l.PruneReplay(c.Round-min(c.Round, c.Liveness.TxLifetime), limit)
	return err
}

// Open fixes c.Membership for a block executing on l: the membership the parent's
// state records for (c.Validators' height, c.Round), or a new one written to
// l (and c.MembershipChanged says whether its members differ). Without
// c.Validators it leaves c.Membership as the caller set it.
func Open(l *state.Layer, c *Context) error {
	if c.Validators == nil {
		return nil
	}
	o, err := OpenMembership(l, c.Validators, c.Round, c.Liveness, c.Rules)
	if err != nil {
		return err
	}
	if o.Opened && o.newRound && c.Rules.Removals {
		// Only a block decides removals: a snapshot of the membership
		// (getOwner, routing) does not pay for them.
		outs, removals, err := c.Liveness.Removal.removals(l, c.Validators, o.Membership, o.records)
		if err != nil {
			return err
		}
		o.Seen, o.Removals = append(o.Seen, outs...), removals
	}
	if o.Opened {
		if err := l.Freeze(o.Membership, o.Seen, o.Removals...); err != nil {
			return err
		}
	}
	restrict := c.Restrict
	if restrict == nil {
		restrict = (*ValidatorSet).Restrict
	}
	c.MembershipChanged = o.Changed
	c.Membership, err = restrict(c.Validators, o.Membership)
	return err
}
