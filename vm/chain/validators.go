package chain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"

	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/vm/execute"
)

// ErrNoValidators means the subnet has no usable validator at the height
// (empty set, or every member without weight or BLS key). Nobody owns any
// range then: callers report "not ready" and never fall back to an
// arbitrary node.
var ErrNoValidators = errcode.New(errcode.NotReady, "no_validators", "chain: no validator with weight and BLS key at this P-chain height")

// Source is the one method of validators.State this package needs. For a
// plugin it is a local call to its own node, answered from P-chain state.
type Source interface {
	GetValidatorSet(ctx context.Context, height uint64, subnetID ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error)
}

// validatorSets holds the most recent P-chain validator sets by height,
// fetching each height once. It is safe for concurrent use.
type validatorSets struct {
	src      Source
	subnetID ids.ID
	limit    int

	mu      sync.Mutex
	byH     map[uint64]*execute.ValidatorSet
	heights []uint64 // insertion order, for eviction
}

// newValidatorSets keeps at most limit sets (at least 1).
func newValidatorSets(src Source, subnetID ids.ID, limit int) *validatorSets {
	return &validatorSets{src: src, subnetID: subnetID, limit: max(limit, 1), byH: map[uint64]*execute.ValidatorSet{}}
}

// cached returns the set at height if it is held, never fetching it.
func (c *validatorSets) cached(height uint64) (*execute.ValidatorSet, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byH[height]
	return e, ok
}

// Get returns the set at height, fetching it on first use. Entries
// with the empty NodeID, zero weight or no BLS key are dropped: they could
// own ranges but never sign for them.
func (c *validatorSets) Get(ctx context.Context, height uint64) (*execute.ValidatorSet, error) {
	c.mu.Lock()
	e, ok := c.byH[height]
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	set, err := c.src.GetValidatorSet(ctx, height, c.subnetID)
	if err != nil {
		return nil, fmt.Errorf("validator set at P-chain height %d: %w", height, err)
	}
	vals := make([]execute.Validator, 0, len(set))
	for id, v := range set {
		if id == ids.EmptyNodeID || v == nil || v.Weight == 0 || v.PublicKey == nil {
			continue
		}
		vals = append(vals, execute.Validator{NodeID: id, Weight: v.Weight, PublicKey: v.PublicKey})
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("%w: height %d", ErrNoValidators, height)
	}
	e, err = execute.NewValidatorSet(height, vals)
	if errors.Is(err, pinning.ErrEmptySet) {
		return nil, fmt.Errorf("%w: height %d", ErrNoValidators, height)
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.byH[height]; ok {
		return cached, nil // a concurrent caller won; keep one instance
	}
	c.byH[height] = e
	c.heights = append(c.heights, height)
	if len(c.heights) > c.limit {
		delete(c.byH, c.heights[0])
		c.heights = slices.Delete(c.heights, 0, 1)
	}
	return e, nil
}
