package localnet

import (
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/snow/consensus/snowball"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/stretchr/testify/require"
)

// TestSnow checks that the consensus parameters are valid for avalanchego,
// reach the primary network, and do what Snow and setPrimaryConsensus say:
// with 3 validators two live ones finalize, one isolated cannot, and
// avalanchego's defaults would stall with one down; with 4, three live ones
// finalize and neither half of a split does. The bounds are the figures
// Snow's comment gives.
func TestSnow(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		// liveQuorum is the smallest live share that must keep finalizing,
		// minority the largest share that must never finalize alone.
		liveQuorum, minority float64
		passes               float64 // polls the live quorum passes, at least
		never                float64 // bound on beta polls in a row for the minority
	}{
		{nodes: 3, liveQuorum: 2.0 / 3, minority: 1.0 / 3, passes: 0.8, never: 1e-30},
		{nodes: 4, liveQuorum: 3.0 / 4, minority: 1.0 / 2, passes: 0.9, never: 3e-11},
	} {
		t.Run(fmt.Sprint(tc.nodes), func(t *testing.T) {
			require := require.New(t)
			snow := Snow(tc.nodes)
			p := parameters(t, snow)
			require.Equal(snow["alphaConfidence"], p.AlphaConfidence)
			require.Equal(snow["beta"], p.Beta)
			require.NoError(p.Verify())

			run := func(p snowball.Parameters, liveShare float64) float64 {
				return math.Pow(pass(p, liveShare), float64(p.Beta))
			}
			require.Greater(pass(p, tc.liveQuorum), tc.passes, "the live validators pass most polls")
			require.Less(run(p, tc.minority), tc.never, "a minority never gets beta polls in a row")
			if tc.nodes == 3 {
				require.Less(run(snowball.DefaultParameters, tc.liveQuorum), 1e-9, "the defaults stall with one validator of three down")
			}
			require.InDelta(1.0, pass(p, 1), 1e-12)
		})
	}
	// Two validators left of three after a removal: one down, the other
	// alone practically never finalizes (the chain waits).
	p := parameters(t, Snow(3))
	require.Less(t, math.Pow(pass(p, 1.0/2), float64(p.Beta)), 2e-8)
}

// parameters are the consensus parameters a node gets from snow, read back
// from the flags setPrimaryConsensus writes.
func parameters(t *testing.T, snow map[string]any) snowball.Parameters {
	flags := tmpnet.FlagsMap{}
	setPrimaryConsensus(flags, snow)
	p := snowball.DefaultParameters
	for key, field := range map[string]*int{
		config.SnowSampleSizeKey:           &p.K,
		config.SnowPreferenceQuorumSizeKey: &p.AlphaPreference,
		config.SnowConfidenceQuorumSizeKey: &p.AlphaConfidence,
		config.SnowCommitThresholdKey:      &p.Beta,
		config.SnowConcurrentRepollsKey:    &p.ConcurrentRepolls,
	} {
		v, err := strconv.Atoi(flags[key])
		require.NoError(t, err, key)
		*field = v
	}
	return p
}

// pass is the probability that a poll of p.K stake units, liveShare of
// the stake answering, gets p.AlphaConfidence votes.
func pass(p snowball.Parameters, liveShare float64) float64 {
	var sum float64
	for i := p.AlphaConfidence; i <= p.K; i++ {
		sum += binomial(p.K, i) * math.Pow(liveShare, float64(i)) * math.Pow(1-liveShare, float64(p.K-i))
	}
	return sum
}

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
