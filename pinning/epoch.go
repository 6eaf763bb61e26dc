package pinning

import (
	"fmt"
	"slices"

	"github.com/ava-labs/avalanchego/ids"
)

// Epoch is an immutable snapshot of the set a node pins against at one
// P-chain height: members sorted by NodeID, their weights, and the
// fingerprint, computed once. Because it never changes after construction,
// any number of goroutines may resolve many ranges under one version of the
// set without locks.
type Epoch struct {
	height      uint64
	members     []Member
	index       map[ids.NodeID]int
	totalWeight uint64
	fingerprint ids.ID
}

// NewEpoch validates members (no duplicates, positive total weight) and
// freezes them at height. The input slice is copied.
func NewEpoch(height uint64, members []Member) (*Epoch, error) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, compareMembers)
	if err := validateSorted(sorted); err != nil {
		return nil, fmt.Errorf("epoch at height %d: %w", height, err)
	}
	e := &Epoch{
		height:      height,
		members:     sorted,
		index:       make(map[ids.NodeID]int, len(sorted)),
		fingerprint: fingerprint(height, sorted),
	}
	for i, m := range sorted {
		e.index[m.NodeID] = i
		e.totalWeight += m.Weight
	}
	return e, nil
}

// Height is the P-chain height the set was frozen at.
func (e *Epoch) Height() uint64 { return e.height }

// Fingerprint is EpochFingerprint(Height(), Members()).
func (e *Epoch) Fingerprint() ids.ID { return e.fingerprint }

// TotalWeight is the sum of all members' weights.
func (e *Epoch) TotalWeight() uint64 { return e.totalWeight }

// Len is the number of members, zero-weight ones included.
func (e *Epoch) Len() int { return len(e.members) }

// Members returns a copy of the members sorted by NodeID.
func (e *Epoch) Members() []Member { return slices.Clone(e.members) }

// Weight returns a member's weight and whether it is a member at all.
func (e *Epoch) Weight(nodeID ids.NodeID) (uint64, bool) {
	i, ok := e.index[nodeID]
	if !ok {
		return 0, false
	}
	return e.members[i].Weight, true
}

// Owner returns the owner of rangeKey. It cannot fail: the set was validated
// when the epoch was built.
func (e *Epoch) Owner(rangeKey string) ids.NodeID {
	o, err := owner(rangeKey, e.members)
	if err != nil {
		// Unreachable: NewEpoch rejects sets without positive weight.
		panic(err)
	}
	return o
}

// IsOwner reports whether nodeID owns rangeKey in this epoch.
func (e *Epoch) IsOwner(rangeKey string, nodeID ids.NodeID) bool {
	return e.Owner(rangeKey) == nodeID
}

// Owners resolves many ranges under this one version of the set; owners[i]
// belongs to rangeKeys[i].
func (e *Epoch) Owners(rangeKeys []string) []ids.NodeID {
	owners := make([]ids.NodeID, len(rangeKeys))
	for i, k := range rangeKeys {
		owners[i] = e.Owner(k)
	}
	return owners
}
