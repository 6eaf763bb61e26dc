package vmtest

import (
	"context"
	"errors"
	"maps"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/snow/validators/validatorstest"
)

// ErrUnknownHeight: no validator set is known at the height asked.
var ErrUnknownHeight = errors.New("vmtest: unknown P-chain height")

// ValidatorSets is the P-chain's validator sets of one subnet by height
// (what chain.Source and the certifier read).
type ValidatorSets map[uint64]map[ids.NodeID]*validators.GetValidatorOutput

// GetValidatorSet answers a copy of the set at h: callers (p2p sampling)
// may change what they get.
func (v ValidatorSets) GetValidatorSet(_ context.Context, h uint64, _ ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	s, ok := v[h]
	if !ok {
		return nil, ErrUnknownHeight
	}
	return maps.Clone(s), nil
}

// State is the validators.State of a node whose P-chain is at current
// (what p2p.Validators samples peers from).
func (v ValidatorSets) State(current uint64) validators.State {
	return &validatorstest.State{
		GetCurrentHeightF: func(context.Context) (uint64, error) { return current, nil },
		GetValidatorSetF:  v.GetValidatorSet,
	}
}
