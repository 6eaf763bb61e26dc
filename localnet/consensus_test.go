package localnet

import (
	"math"
	"strconv"
	"testing"

	"github.com/ava-labs/avalanchego/config"
	"github.com/ava-labs/avalanchego/snow/consensus/snowball"
	"github.com/ava-labs/avalanchego/tests/fixture/tmpnet"
	"github.com/stretchr/testify/require"
)

// TestPrimaryConsensus checks that the primary network's parameters are
// valid for avalanchego and do what consensus.go says: two live validators
// of three finalize, one isolated validator cannot, and avalanchego's
// defaults would stall with one of three down.
func TestPrimaryConsensus(t *testing.T) {
	require := require.New(t)
	flags := tmpnet.FlagsMap{}
	setPrimaryConsensus(flags)
	p := snowball.DefaultParameters
	for key, field := range map[string]*int{
		config.SnowSampleSizeKey:           &p.K,
		config.SnowPreferenceQuorumSizeKey: &p.AlphaPreference,
		config.SnowConfidenceQuorumSizeKey: &p.AlphaConfidence,
		config.SnowCommitThresholdKey:      &p.Beta,
		config.SnowConcurrentRepollsKey:    &p.ConcurrentRepolls,
	} {
		v, err := strconv.Atoi(flags[key])
		require.NoError(err, key)
		*field = v
	}
	require.Equal(DefaultSnow()["alphaConfidence"], p.AlphaConfidence)
	require.NoError(p.Verify())

	run := func(p snowball.Parameters, liveShare float64) float64 {
		return math.Pow(pass(p, liveShare), float64(p.Beta))
	}
	require.Greater(pass(p, 2.0/3), 0.8, "two of three validators pass most polls")
	require.Less(run(p, 1.0/3), 1e-20, "one isolated validator never gets beta polls in a row")
	require.Less(run(snowball.DefaultParameters, 2.0/3), 1e-9, "the defaults stall with one of three down")
	// Two validators left after a removal: both up, every poll passes; one
	// down, the other alone practically never finalizes (the chain waits).
	require.InDelta(1.0, pass(p, 1), 1e-12)
	require.Less(run(p, 1.0/2), 1e-7)
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
