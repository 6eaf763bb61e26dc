package execute

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"

	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/state"
)

// Validator is one member of an epoch's validator set as execution needs it:
// pinning weight plus the BLS key the P-chain registered for it.
type Validator struct {
	NodeID    ids.NodeID
	Weight    uint64
	PublicKey *bls.PublicKey
}

// Epoch is the immutable snapshot a block's transactions are checked
// against: the members ranges are pinned to (HRW owners, the fingerprint),
// and the BLS keys of the whole P-chain set, so that a validator outside the
// members can still sign its heartbeat. It is computed once per epoch.
type Epoch struct {
	*pinning.Epoch
	keys        map[ids.NodeID]*bls.PublicKey
	fingerprint ids.ID
	membership  *state.Membership // nil for a plain P-chain set
}

// NewEpoch freezes vals, the P-chain set at a height. Members without a BLS
// key may still own ranges in pinning's view, but their transactions can
// never verify; callers should drop them before (the VM does).
func NewEpoch(height uint64, vals []Validator) (*Epoch, error) {
	members := make([]pinning.Member, len(vals))
	keys := make(map[ids.NodeID]*bls.PublicKey, len(vals))
	for i, v := range vals {
		members[i] = pinning.Member{NodeID: v.NodeID, Weight: v.Weight}
		if v.PublicKey != nil {
			keys[v.NodeID] = v.PublicKey
		}
	}
	pe, err := pinning.NewEpoch(height, members)
	if err != nil {
		return nil, fmt.Errorf("validator set at height %d: %w", height, err)
	}
	return &Epoch{Epoch: pe, keys: keys, fingerprint: pe.Fingerprint()}, nil
}

// membershipDomain separates membership fingerprints from plain set
// fingerprints.
const membershipDomain = "schain/membership/v1"

// Restrict returns the epoch ranges are pinned to under m, a membership
// frozen from this P-chain set: HRW over m's members only, signer keys of
// the whole set, and a fingerprint that also covers m's generation, so a
// transaction signed against one membership never verifies under a later
// one, even an identical set that came back.
func (e *Epoch) Restrict(m *state.Membership) (*Epoch, error) {
	if m.PChainHeight != e.Height() {
		return nil, fmt.Errorf("membership of P-chain height %d applied to the set at %d", m.PChainHeight, e.Height())
	}
	for _, mb := range m.Members {
		if w, ok := e.Epoch.Weight(mb.NodeID); !ok || w != mb.Weight {
			return nil, fmt.Errorf("membership names %s (weight %d), which the set at height %d does not hold with that weight", mb.NodeID, mb.Weight, e.Height())
		}
	}
	pe, err := pinning.NewEpoch(m.PChainHeight, m.Members)
	if err != nil {
		return nil, fmt.Errorf("membership at height %d round %d: %w", m.PChainHeight, m.Round, err)
	}
	h := sha256.New()
	h.Write([]byte(membershipDomain))
	fp := pe.Fingerprint()
	h.Write(fp[:])
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], m.Generation)
	h.Write(buf[:])
	out := &Epoch{Epoch: pe, keys: e.keys, membership: m}
	h.Sum(out.fingerprint[:0])
	return out, nil
}

// Fingerprint is what transactions pinned to this epoch carry: the set's
// fingerprint, mixed with the membership generation for a membership.
func (e *Epoch) Fingerprint() ids.ID { return e.fingerprint }

// Membership is the frozen membership this epoch pins to, or nil for a plain
// P-chain set.
func (e *Epoch) Membership() *state.Membership { return e.membership }

// Round is the liveness epoch of the membership (0 for a plain set).
func (e *Epoch) Round() uint64 {
	if e.membership == nil {
		return 0
	}
	return e.membership.Round
}

// PublicKey returns the registered BLS key of a member of the P-chain set.
func (e *Epoch) PublicKey(nodeID ids.NodeID) (*bls.PublicKey, bool) {
	pk, ok := e.keys[nodeID]
	return pk, ok
}

// CheckOwner returns a NotOwnerError for the first range signer does not own.
// HRW costs one hash per validator, so each distinct range is resolved once,
// however many entries of a group share it.
func (e *Epoch) CheckOwner(ranges []string, signer ids.NodeID) error {
	checked := make(map[string]struct{}, len(ranges))
	for _, rk := range ranges {
		if _, ok := checked[rk]; ok {
			continue
		}
		checked[rk] = struct{}{}
		if o := e.Owner(rk); o != signer {
			return &NotOwnerError{Range: rk, Signer: signer, Owner: o, Epoch: e.Height()}
		}
	}
	return nil
}
