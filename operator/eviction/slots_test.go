package eviction

import (
	"context"
	"fmt"
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
// proposer windower, the figures docs/concepts/liveness.md ("What a failover waits
// for") and the README give for a dead validator left on the P-chain: of n
// equal validators it is drawn for a slot with probability 1/n, so a height
// waits for 1/(n-1) of its 5 s slots on average and for three or more one
// time in n^3: 0.5 slots (2.5 s) and 1 in 27 with three validators, 0.33
// slots (1.7 s) and 1 in 64 with four (the local network). This is why
// removing it (this package's policy) is what ends the gaps, and why a
// failover that needs three blocks often takes longer than the liveness
// rule's bound.
func TestDeadValidatorsProposerSlots(t *testing.T) {
	for _, n := range []int{3, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			require := require.New(t)
			set := make(equalSet, n)
			for i := range set {
				set[i] = ids.BuildTestNodeID([]byte{byte(i + 1)})
			}
			dead := set[0]
			w := proposer.New(set, ids.Empty, ids.ID{'s', 'c', 'h', 'a', 'i', 'n'}, logging.NoLog{})
			const heights = 5400
			var slots, three int
			for h := uint64(1); h <= heights; h++ {
				k := 0
				for slot := uint64(0); ; slot++ {
					p, err := w.ExpectedProposer(context.Background(), h, 1, slot)
					require.NoError(err)
					if p != dead {
						break
					}
					k++
				}
				slots += k
				if k >= 3 {
					three++
				}
			}
			mean := float64(slots) / heights
			require.InDelta(1/float64(n-1), mean, 0.05, "dead slots per height")
			require.InDelta(1/float64(n*n*n), float64(three)/heights, 0.01, "heights waiting 15 s or more")
			t.Logf("%d validators, over %d heights: %.3f dead slots per height, %d heights (1 in %.0f) with 3 or more", n, heights, mean, three, float64(heights)/float64(max(three, 1)))
		})
	}
}

// TestTickGivesARoundTwoSlots reproduces, with avalanchego's windower, why
// an idle chain builds a tick in the middle of each liveness round
// (builder's ticks): with four equal validators, one dead, and 5 s rounds.
// Without ticks the round-start blocks are the only blocks, dated on round
// starts, so the height that should carry round R's heartbeats has the
// slot [R, R+5) for them, and the round passes without a block whenever
// that slot is the dead validator's: one round in four. With a tick at
// R-2.5 (dated R-3: the proposer VM's timestamps are whole seconds) the
// height's slots are [R-3, R+2) and [R+2, R+7), and the round passes
// without a block only when both are the dead validator's: one in sixteen.
func TestTickGivesARoundTwoSlots(t *testing.T) {
	require := require.New(t)
	set := make(equalSet, 4)
	for i := range set {
		set[i] = ids.BuildTestNodeID([]byte{byte(i + 1)})
	}
	dead := set[0]
	w := proposer.New(set, ids.Empty, ids.ID{'s', 'c', 'h', 'a', 'i', 'n'}, logging.NoLog{})
	drawn := func(h, slot uint64) bool {
		p, err := w.ExpectedProposer(context.Background(), h, 1, slot)
		require.NoError(err)
		return p == dead
	}
	const heights = 5400
	var aligned, ticked int
	for h := uint64(1); h <= heights; h++ {
		if drawn(h, 1) { // parent dated R-5: [R, R+5) is slot 1
			aligned++
		}
		if drawn(h, 0) && drawn(h, 1) { // parent dated R-3
			ticked++
		}
	}
	require.InDelta(1.0/4, float64(aligned)/heights, 0.02, "rounds without a block, no ticks")
	require.InDelta(1.0/16, float64(ticked)/heights, 0.015, "rounds without a block, with ticks")
	t.Logf("over %d heights, rounds without a block: %.3f without ticks, %.3f with", heights, float64(aligned)/heights, float64(ticked)/heights)
}
