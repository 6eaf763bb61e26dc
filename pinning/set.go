package pinning

import (
	"fmt"
	"slices"

	"github.com/ava-labs/avalanchego/ids"
)

// Set is an immutable snapshot of the set a node pins against at one
// P-chain height: members sorted by NodeID, their weights, and the
// fingerprint, computed once. Because it never changes after construction,
// any number of goroutines may resolve many ranges under one version of the
// set without locks.
type Set struct {
	height      uint64
	members     []Member
	index       map[ids.NodeID]int
	totalWeight uint64
	fingerprint ids.ID
}

// NewSet validates members (no duplicates, positive total weight) and
// freezes them at height. The input slice is copied.
func NewSet(height uint64, members []Member) (*Set, error) {
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, compareMembers)
	if err := validateSorted(sorted); err != nil {
		return nil, fmt.Errorf("set at height %d: %w", height, err)
	}
	e := &Set{
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
func (s *Set) Height() uint64 { return s.height }

// Fingerprint is SetFingerprint(Height(), Members()).
func (s *Set) Fingerprint() ids.ID { return s.fingerprint }

// TotalWeight is the sum of all members' weights.
func (s *Set) TotalWeight() uint64 { return s.totalWeight }

// Len is the number of members, zero-weight ones included.
func (s *Set) Len() int { return len(s.members) }

// Members returns a copy of the members sorted by NodeID.
func (s *Set) Members() []Member { return slices.Clone(s.members) }

// Weight returns a member's weight and whether it is a member at all.
func (s *Set) Weight(nodeID ids.NodeID) (uint64, bool) {
	i, ok := s.index[nodeID]
	if !ok {
		return 0, false
	}
	return s.members[i].Weight, true
}

// Owner returns the owner of rangeKey. It cannot fail: the set was validated
// when the set was built.
func (s *Set) Owner(rangeKey string) ids.NodeID {
	o, err := owner(rangeKey, s.members)
	if err != nil {
		// Unreachable: NewSet rejects sets without positive weight.
		panic(err)
	}
	return o
}

// IsOwner reports whether nodeID owns rangeKey in this set.
func (s *Set) IsOwner(rangeKey string, nodeID ids.NodeID) bool {
	return s.Owner(rangeKey) == nodeID
}

// Owners resolves many ranges under this one version of the set; owners[i]
// belongs to rangeKeys[i].
func (s *Set) Owners(rangeKeys []string) []ids.NodeID {
	owners := make([]ids.NodeID, len(rangeKeys))
	for i, k := range rangeKeys {
		owners[i] = s.Owner(k)
	}
	return owners
}
