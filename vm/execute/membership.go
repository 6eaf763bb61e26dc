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

// Validator is one member of a P-chain validator set as execution needs it:
// pinning weight plus the BLS key the P-chain registered for it.
type Validator struct {
	NodeID    ids.NodeID
	Weight    uint64
	PublicKey *bls.PublicKey
}

// ValidatorSet is the P-chain validator set at one height: every
// validator's weight and BLS key. A membership is taken from it (Restrict);
// its keys verify signatures, so a validator outside the membership can
// still sign its heartbeat. It is immutable and computed once per height.
type ValidatorSet struct {
	*pinning.Set
	keys map[ids.NodeID]*bls.PublicKey
}

// NewValidatorSet freezes vals, the P-chain set at height. Validators
// without a BLS key may still own ranges in pinning's view, but their
// transactions can never verify; callers should drop them before (the
// chain does).
func NewValidatorSet(height uint64, vals []Validator) (*ValidatorSet, error) {
	members := make([]pinning.Member, len(vals))
	keys := make(map[ids.NodeID]*bls.PublicKey, len(vals))
	for i, v := range vals {
		members[i] = pinning.Member{NodeID: v.NodeID, Weight: v.Weight}
		if v.PublicKey != nil {
			keys[v.NodeID] = v.PublicKey
		}
	}
	set, err := pinning.NewSet(height, members)
	if err != nil {
		return nil, fmt.Errorf("validator set at height %d: %w", height, err)
	}
	return &ValidatorSet{Set: set, keys: keys}, nil
}

// PublicKey returns the registered BLS key of a validator of the set.
func (v *ValidatorSet) PublicKey(nodeID ids.NodeID) (*bls.PublicKey, bool) {
	pk, ok := v.keys[nodeID]
	return pk, ok
}

// All is the membership of every validator of the set, with no liveness
// record: what tools and benchmarks pin against when liveness plays no
// part. Its fingerprint is the set's.
func (v *ValidatorSet) All() *Membership {
	return &Membership{Set: v.Set, keys: v.keys, fingerprint: v.Fingerprint()}
}

// membershipDomain separates membership fingerprints from set fingerprints.
const membershipDomain = "schain/membership/v1"

// Restrict returns the membership frozen in record m, taken from this set:
// HRW over m's members only, signer keys of the whole set, and a
// fingerprint that also covers m's generation, so a transaction signed
// against one membership never verifies under a later one, even an
// identical set that came back.
func (v *ValidatorSet) Restrict(m *state.Membership) (*Membership, error) {
	if m.PChainHeight != v.Height() {
		return nil, fmt.Errorf("membership of P-chain height %d applied to the set at %d", m.PChainHeight, v.Height())
	}
	for _, mb := range m.Members {
		if w, ok := v.Weight(mb.NodeID); !ok || w != mb.Weight {
			return nil, fmt.Errorf("membership names %s (weight %d), which the set at height %d does not hold with that weight", mb.NodeID, mb.Weight, v.Height())
		}
	}
	set, err := pinning.NewSet(m.PChainHeight, m.Members)
	if err != nil {
		return nil, fmt.Errorf("membership at height %d round %d: %w", m.PChainHeight, m.Round, err)
	}
	h := sha256.New()
	h.Write([]byte(membershipDomain))
	fp := set.Fingerprint()
	h.Write(fp[:])
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], m.Generation)
	h.Write(buf[:])
	out := &Membership{Set: set, keys: v.keys, record: m}
	h.Sum(out.fingerprint[:0])
	return out, nil
}

// Membership is what a block's transactions are checked against: the
// members ranges are pinned to (HRW owners), the BLS keys of the whole
// P-chain set, and the fingerprint transactions carry. It is immutable.
type Membership struct {
	*pinning.Set
	keys        map[ids.NodeID]*bls.PublicKey
	fingerprint ids.ID
	record      *state.Membership // nil for ValidatorSet.All
}

// Fingerprint is what transactions pinned to this membership carry: the
// set's fingerprint, mixed with the generation for a frozen membership.
func (m *Membership) Fingerprint() ids.ID { return m.fingerprint }

// Record is the frozen membership record (nil for ValidatorSet.All).
func (m *Membership) Record() *state.Membership { return m.record }

// Round is the liveness round the membership was frozen in (0 without a
// record).
func (m *Membership) Round() uint64 {
	if m.record == nil {
		return 0
	}
	return m.record.Round
}

// PublicKey returns the registered BLS key of a validator of the P-chain
// set (member or not).
func (m *Membership) PublicKey(nodeID ids.NodeID) (*bls.PublicKey, bool) {
	pk, ok := m.keys[nodeID]
	return pk, ok
}

// CheckOwner returns a NotOwnerError for the first range signer does not own.
// HRW costs one hash per validator, so each distinct range is resolved once,
// however many entries of a group share it.
func (m *Membership) CheckOwner(ranges []string, signer ids.NodeID) error {
	checked := make(map[string]struct{}, len(ranges))
	for _, rk := range ranges {
		if _, ok := checked[rk]; ok {
			continue
		}
		checked[rk] = struct{}{}
		if o := m.Owner(rk); o != signer {
			return &NotOwnerError{Range: rk, Signer: signer, Owner: o, PChainHeight: m.Height()}
		}
	}
	return nil
}
