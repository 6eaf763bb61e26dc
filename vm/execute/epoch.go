package execute

import (
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"

	"github.com/s-chain/schain/pinning"
)

// Validator is one member of an epoch's validator set as execution needs it:
// pinning weight plus the BLS key the P-chain registered for it.
type Validator struct {
	NodeID    ids.NodeID
	Weight    uint64
	PublicKey *bls.PublicKey
}

// Epoch is the immutable validator snapshot a block's transactions are
// checked against: HRW owners, the fingerprint and the signers' keys, all
// computed once per epoch.
type Epoch struct {
	*pinning.Epoch
	keys map[ids.NodeID]*bls.PublicKey
}

// NewEpoch freezes vals at a P-chain height. Members without a BLS key may
// still own ranges in pinning's view, but their transactions can never
// verify; callers should drop them before (the VM does).
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
	return &Epoch{Epoch: pe, keys: keys}, nil
}

// PublicKey returns a member's registered BLS key.
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
