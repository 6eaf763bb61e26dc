package state

import (
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/internal/wire"
	"github.com/s-chain/schain/pinning"
)

// Receipt records what an applied transaction did, entry by entry, so a
// client can learn its ids from any node after Accept.
type Receipt struct {
	TxID    ids.ID         `json:"txID"`
	Height  uint64         `json:"height"`
	Kind    string         `json:"kind"`
	Entries []ReceiptEntry `json:"entries"`
}

// ReceiptEntry is one entry's outcome: the ids reserved by an allocate entry
// ([Base, Base+Count) in Range), the object a manifest entry wrote, the
// chunk a reclaim entry took off its released list (Range, ID), or what a
// lease entry got.
type ReceiptEntry struct {
	Range   string `json:"range,omitempty"`
	Base    uint64 `json:"base,omitempty"`
	Count   uint64 `json:"count,omitempty"`
	Bucket  string `json:"bucket,omitempty"`
	Key     string `json:"key,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	// The fields below are a ManifestTx's or ReclaimTx's (receipt record
	// version 2).

	// Version is the version a manifest entry wrote (0 for the deletion of
	// an object that was not live, which writes nothing).
	Version uint64 `json:"version,omitempty"`
	// Refused is the reason an entry wrote nothing (an errcode reason such
	// as "precondition_failed" or "chunk_in_use"), with Detail naming what
	// stood in the way.
	Refused string `json:"refused,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Current is the object's version when its precondition failed (0: not
	// live).
	Current uint64 `json:"current,omitempty"`
	// ID is the chunk a reclaim entry names (in Range).
	ID uint64 `json:"id,omitempty"`
	// The fields below are a LeaseTx's (receipt record version 3): the
	// entry's outcome, and the lease of Range the block left (the grant,
	// or the holder who kept it; empty when nobody holds it).
	Lease     LeaseOutcome `json:"lease,omitempty"`
	Holder    string       `json:"holder,omitempty"`
	Token     uint64       `json:"token,omitempty"`
	ExpiresMs uint64       `json:"expiresMs,omitempty"`
}

// LeaseOutcome is what a lease entry got.
type LeaseOutcome string

// The outcomes. Granted, Renewed and Released did what was asked; Held and
// Lost did nothing.
const (
	LeaseGranted  LeaseOutcome = "granted"
	LeaseRenewed  LeaseOutcome = "renewed"
	LeaseReleased LeaseOutcome = "released"
	// LeaseHeld: an acquire found another holder's unexpired grant.
	LeaseHeld LeaseOutcome = "held"
	// LeaseLost: a renew or release named a grant that expired, was
	// released or was never this holder's.
	LeaseLost LeaseOutcome = "lost"
)

// Receipt record versions: 1 for the kinds before the manifests upgrade
// (their bytes, and so the state root, never change), 2 for ManifestTx and
// ReclaimTx, 3 for LeaseTx.
const (
	receiptVersion      byte = 1
	receiptVersionV2    byte = 2
	receiptVersionLease byte = 3
)

// receiptVersionOf is the record version of a receipt of kind.
func receiptVersionOf(kind string) byte {
	switch kind {
	case "manifest", "reclaim":
		return receiptVersionV2
	case "lease":
		return receiptVersionLease
	}
	return receiptVersion
}

func encodeReceipt(r *Receipt) ([]byte, error) {
	w := &wire.Writer{}
	version := receiptVersionOf(r.Kind)
	v2 := version == receiptVersionV2
	w.U8(version)
	w.Raw(r.TxID[:])
	w.U64(r.Height)
	w.Str(r.Kind)
	w.U32(uint32(len(r.Entries)))
	for _, e := range r.Entries {
		w.Str(e.Range)
		w.U64(e.Base)
		w.U64(e.Count)
		w.Str(e.Bucket)
		w.Str(e.Key)
		w.Bool(e.Deleted)
		if v2 {
			w.U64(e.Version)
			w.Str(e.Refused)
			w.Str(e.Detail)
			w.U64(e.Current)
			w.U64(e.ID)
		}
		if version == receiptVersionLease {
			w.Str(string(e.Lease))
			w.Str(e.Holder)
			w.U64(e.Token)
			w.U64(e.ExpiresMs)
		}
	}
	return w.B, w.Err
}

func decodeReceipt(b []byte) (*Receipt, error) {
	r := &wire.Reader{B: b}
	v := r.U8()
	if r.Err == nil && v != receiptVersion && v != receiptVersionV2 && v != receiptVersionLease {
		return nil, fmt.Errorf("%w: receipt version %d", ErrCorrupt, v)
	}
	rc := &Receipt{}
	r.Fixed(rc.TxID[:])
	rc.Height = r.U64()
	rc.Kind = r.Str()
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		e := ReceiptEntry{
			Range: r.Str(), Base: r.U64(), Count: r.U64(),
			Bucket: r.Str(), Key: r.Str(), Deleted: r.Bool(),
		}
		if v == receiptVersionV2 {
			e.Version, e.Refused, e.Detail, e.Current, e.ID = r.U64(), r.Str(), r.Str(), r.U64(), r.U64()
		}
		if v == receiptVersionLease {
			e.Lease, e.Holder, e.Token, e.ExpiresMs = LeaseOutcome(r.Str()), r.Str(), r.U64(), r.U64()
		}
		rc.Entries = append(rc.Entries, e)
	}
	if r.Err == nil && receiptVersionOf(rc.Kind) != v {
		return nil, fmt.Errorf("%w: receipt of a %s in record version %d", ErrCorrupt, rc.Kind, v)
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("%w: receipt: %w", ErrCorrupt, err)
	}
	return rc, nil
}

// Lease is the lease of a range: its holder, the fencing token of the grant
// (it only grows for a range, across holders and releases) and when it
// expires, in unix milliseconds of block time. Whether it still holds is a
// matter of the block time it is read at: an expired lease is free to
// acquire, but its record stays until the next operation on the range.
type Lease struct {
	Holder    string `json:"holder"`
	Token     uint64 `json:"token"`
	ExpiresMs uint64 `json:"expiresMs"`
}

// Held reports whether l is unexpired at block time nowMs.
func (l Lease) Held(nowMs uint64) bool { return nowMs < l.ExpiresMs }

const leaseVersion byte = 1

func encodeLease(l Lease) []byte {
	w := &wire.Writer{}
	w.U8(leaseVersion)
	w.Str(l.Holder)
	w.U64(l.Token)
	w.U64(l.ExpiresMs)
	return w.B
}

func decodeLease(b []byte) (Lease, error) {
	r := &wire.Reader{B: b}
	if v := r.U8(); r.Err == nil && v != leaseVersion {
		return Lease{}, fmt.Errorf("%w: lease version %d", ErrCorrupt, v)
	}
	l := Lease{Holder: r.Str(), Token: r.U64(), ExpiresMs: r.U64()}
	if err := r.Done(); err != nil {
		return Lease{}, fmt.Errorf("%w: lease record: %w", ErrCorrupt, err)
	}
	return l, nil
}

// Accepted is the last accepted block as the database records it.
type Accepted struct {
	ID     ids.ID
	Height uint64
	Root   ids.ID
}

func encodeAccepted(a Accepted) []byte {
	w := &wire.Writer{}
	w.Raw(a.ID[:])
	w.U64(a.Height)
	w.Raw(a.Root[:])
	return w.B
}

func decodeAccepted(b []byte) (Accepted, error) {
	var a Accepted
	r := &wire.Reader{B: b}
	r.Fixed(a.ID[:])
	a.Height = r.U64()
	r.Fixed(a.Root[:])
	if err := r.Done(); err != nil {
		return Accepted{}, fmt.Errorf("%w: last-accepted record: %w", ErrCorrupt, err)
	}
	return a, nil
}

// Liveness is what the chain knows of one validator's liveness, in liveness
// rounds (of the genesis round duration).
type Liveness struct {
	// FirstSeen is the round of the first membership computed while the
	// validator was in the P-chain set: its grace period starts there.
	FirstSeen uint64 `json:"firstSeen"`
	// Heartbeat is the newest round with an accepted heartbeat of it, valid
	// only if HasHeartbeat.
	Heartbeat    uint64 `json:"heartbeat"`
	HasHeartbeat bool   `json:"hasHeartbeat"`
	// Out counts the consecutive rounds that had a block in which the
	// validator was not a member (execute.Rules.Removals; 0 before it).
	Out uint64 `json:"out,omitempty"`
}

// Liveness encodings: version 1 as first written; version 2 appends Out,
// and is written only while Out is not zero, so records written before
// the removals change keep their bytes.
const (
	livenessVersion    byte = 1
	livenessVersionOut byte = 2
)

func encodeLiveness(l Liveness) []byte {
	w := &wire.Writer{}
	if l.Out == 0 {
		w.U8(livenessVersion)
	} else {
		w.U8(livenessVersionOut)
	}
	w.U64(l.FirstSeen)
	w.U64(l.Heartbeat)
	w.Bool(l.HasHeartbeat)
	if l.Out != 0 {
		w.U64(l.Out)
	}
	return w.B
}

func decodeLiveness(b []byte) (Liveness, error) {
	r := &wire.Reader{B: b}
	v := r.U8()
	if r.Err == nil && v != livenessVersion && v != livenessVersionOut {
		return Liveness{}, fmt.Errorf("%w: liveness version %d", ErrCorrupt, v)
	}
	l := Liveness{FirstSeen: r.U64(), Heartbeat: r.U64(), HasHeartbeat: r.Bool()}
	if v == livenessVersionOut {
		if l.Out = r.U64(); r.Err == nil && l.Out == 0 {
			return Liveness{}, fmt.Errorf("%w: liveness record of version 2 with Out 0", ErrCorrupt)
		}
	}
	if err := r.Done(); err != nil {
		return Liveness{}, fmt.Errorf("%w: liveness record: %w", ErrCorrupt, err)
	}
	return l, nil
}

// Membership is the set ranges are pinned to, frozen by the first block of
// a liveness round (Round) from the state its parent left, so that every
// later block of the round, every node and every restart use the same one.
type Membership struct {
	// PChainHeight is the height of the validator set the members were
	// taken from (the first block's P-chain context).
	PChainHeight uint64 `json:"pChainHeight"`
	Round        uint64 `json:"round"`
	// Generation counts changes of (PChainHeight, Members) along the chain:
	// it enters the fingerprint, so a transaction signed against one
	// membership is dead once another is in force, even if the same set
	// comes back later.
	Generation uint64 `json:"generation"`
	// Fallback is set when no validator was live and the whole P-chain set
	// was taken instead (never nobody).
	Fallback bool             `json:"fallback"`
	Members  []pinning.Member `json:"members"`
	// BlockRounds is this round and the rounds before it that had a block,
	// newest first (K+1 of them): what a validator's grace is counted in
	// (execute.Rules.LivenessGaps). Empty in records written before that
	// change, whose encoding it leaves as it was.
	BlockRounds []uint64 `json:"blockRounds,omitempty"`
}

// After reports whether m comes later than o on one chain: a higher P-chain
// height, or a later generation at the same height. Memberships along a
// chain only move forward in this order, so one that is not After the
// membership in force is superseded for good.
func (m *Membership) After(o *Membership) bool {
	if m.PChainHeight != o.PChainHeight {
		return m.PChainHeight > o.PChainHeight
	}
	return m.Generation > o.Generation
}

// Membership encodings: version 1 as first written; version 2 appends
// BlockRounds and is written only when there are any, so a record without
// them keeps its bytes (and the state root its value).
const (
	membershipVersion       byte = 1
	membershipVersionRounds byte = 2
)

func encodeMembership(m *Membership) ([]byte, error) {
	w := &wire.Writer{}
	version := membershipVersion
	if len(m.BlockRounds) > 0 {
		version = membershipVersionRounds
	}
	w.U8(version)
	w.U64(m.PChainHeight)
	w.U64(m.Round)
	w.U64(m.Generation)
	w.Bool(m.Fallback)
	w.U32(uint32(len(m.Members)))
	for _, mb := range m.Members {
		w.Raw(mb.NodeID[:])
		w.U64(mb.Weight)
	}
	if version == membershipVersionRounds {
		w.U32(uint32(len(m.BlockRounds)))
		for _, r := range m.BlockRounds {
			w.U64(r)
		}
	}
	return w.B, w.Err
}

func decodeMembership(b []byte) (*Membership, error) {
	r := &wire.Reader{B: b}
	version := r.U8()
	if r.Err == nil && version != membershipVersion && version != membershipVersionRounds {
		return nil, fmt.Errorf("%w: membership version %d", ErrCorrupt, version)
	}
	m := &Membership{PChainHeight: r.U64(), Round: r.U64(), Generation: r.U64(), Fallback: r.Bool()}
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		var mb pinning.Member
		r.Fixed(mb.NodeID[:])
		mb.Weight = r.U64()
		m.Members = append(m.Members, mb)
	}
	if version == membershipVersionRounds {
		n := r.U32()
		for i := uint32(0); i < n && r.Err == nil; i++ {
			m.BlockRounds = append(m.BlockRounds, r.U64())
		}
		if r.Err == nil && n == 0 {
			return nil, fmt.Errorf("%w: membership record of version %d without rounds", ErrCorrupt, version)
		}
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("%w: membership record: %w", ErrCorrupt, err)
	}
	return m, nil
}

// Removal is the chain's decision to remove a validator from the P-chain
// set (execute.Rules.Removals): it was out of the membership for the
// genesis's removalRounds rounds that had blocks. The record stays while
// the validator is out of the set, so that it can be readmitted; it is
// deleted when the validator is a member again.
type Removal struct {
	// Round is the liveness round of the block that decided it, and
	// PChainHeight the P-chain height of that block's set.
	Round        uint64 `json:"round"`
	PChainHeight uint64 `json:"pChainHeight"`
	// Weight is the validator's weight in that set.
	Weight uint64 `json:"weight"`
}

const removalVersion byte = 1

func encodeRemoval(r Removal) []byte {
	w := &wire.Writer{}
	w.U8(removalVersion)
	w.U64(r.Round)
	w.U64(r.PChainHeight)
	w.U64(r.Weight)
	return w.B
}

func decodeRemoval(b []byte) (Removal, error) {
	r := &wire.Reader{B: b}
	if v := r.U8(); r.Err == nil && v != removalVersion {
		return Removal{}, fmt.Errorf("%w: removal version %d", ErrCorrupt, v)
	}
	rm := Removal{Round: r.U64(), PChainHeight: r.U64(), Weight: r.U64()}
	if err := r.Done(); err != nil {
		return Removal{}, fmt.Errorf("%w: removal record: %w", ErrCorrupt, err)
	}
	return rm, nil
}
