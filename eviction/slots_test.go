package eviction

import (
	"context"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/units"
	"github.com/ava-labs/avalanchego/vms/proposervm/proposer"
	"github.com/stretchr/testify/require"
)

// equalSet is a validators.State with one set of equal weights at every
// P-chain height.
type equalSet []ids.NodeID

func (s equalSet) GetMinimumHeight(context.Context) (uint64, error)    { return 0, nil }
func (s equalSet) GetCurrentHeight(context.Context) (uint64, error)    { return 0, nil }
func (s equalSet) GetSubnetID(context.Context, ids.ID) (ids.ID, error) { return ids.Empty, nil }
func (s equalSet) GetValidatorSet(context.Context, uint64, ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	out := make(map[ids.NodeID]*validators.GetValidatorOutput, len(s))
	for _, id := range s {
		out[id] = &validators.GetValidatorOutput{NodeID: id, Weight: units.Schmeckle}
	}
	return out, nil
}

func (equalSet) GetCurrentValidatorSet(context.Context, ids.ID) (map[ids.ID]*validators.GetCurrentValidatorOutput, uint64, error) {
	return nil, 0, nil
}

func (equalSet) GetWarpValidatorSets(context.Context, uint64) (map[ids.ID]validators.WarpSet, error) {
	return nil, nil
}

func (equalSet) GetWarpValidatorSet(context.Context, uint64, ids.ID) (validators.WarpSet, error) {
	return validators.WarpSet{}, nil
}

// TestDeadValidatorsProposerSlots reproduces, with avalanchego's own
// proposer windower, the figures docs/liveness.md ("What a failover waits
// for") and the README give for a dead validator left on the P-chain: with
// three of equal weight, a height waits for 0.5 of its 5 s slots on average
// (2.5 s) and for three or more one time in 27. This is why removing it
// (this package's policy) is what ends the gaps, and why a failover that
// needs three blocks often takes longer than the liveness rule's bound.
func TestDeadValidatorsProposerSlots(t *testing.T) {
	require := require.New(t)
	set := equalSet{ids.BuildTestNodeID([]byte{1}), ids.BuildTestNodeID([]byte{2}), ids.BuildTestNodeID([]byte{3})}
	dead := set[0]
	w := proposer.New(set, ids.Empty, ids.ID{'s', 'c', 'h', 'a', 'i', 'n'}, logging.NoLog{})
	const heights = 5400
	var slots, three int
	for h := uint64(1); h <= heights; h++ {
		n := 0
		for slot := uint64(0); ; slot++ {
			p, err := w.ExpectedProposer(context.Background(), h, 1, slot)
			require.NoError(err)
			if p != dead {
				break
			}
			n++
		}
		slots += n
		if n >= 3 {
			three++
		}
	}
	mean := float64(slots) / heights
	require.InDelta(0.5, mean, 0.05, "dead slots per height")
	require.InDelta(1.0/27, float64(three)/heights, 0.01, "heights waiting 15 s or more")
	t.Logf("over %d heights: %.3f dead slots per height, %d heights (1 in %.0f) with 3 or more", heights, mean, three, float64(heights)/float64(three))
}
