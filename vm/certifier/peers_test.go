package certifier

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"
)

// TestPeerHeightsNeedAThirdOfTheStake: the height a node lags behind is
// the newest that validators holding more than a third of the stake
// reached; a validator outside the set, or alone with less, moves nothing.
func TestPeerHeightsNeedAThirdOfTheStake(t *testing.T) {
	require := require.New(t)
	a, b, c, d := ids.GenerateTestNodeID(), ids.GenerateTestNodeID(), ids.GenerateTestNodeID(), ids.GenerateTestNodeID()
	var p peerHeights
	_, ok := p.reached()
	require.False(ok, "nothing known")
	p.weigh(map[ids.NodeID]uint64{a: 40, b: 30, c: 20, d: 10}, 100)

	p.saw(d, 900)
	_, ok = p.reached()
	require.False(ok, "10 of 100 alone is not enough")
	p.saw(a, 500)
	h, ok := p.reached()
	require.True(ok)
	require.Equal(uint64(500), h, "the newest height a third of the stake reached: d's 900 is 10 alone, with a's 500 it is 50")
	p.saw(c, 900)
	h, _ = p.reached()
	require.Equal(uint64(500), h, "c and d hold 30: not more than a third")
	p.saw(b, 700)
	h, _ = p.reached()
	require.Equal(uint64(700), h, "b, c and d hold 60 at 700 or above")
	p.saw(b, 600)
	h, _ = p.reached()
	require.Equal(uint64(700), h, "a validator's height never goes down")

	// A new set forgets those who left; their heights count no more.
	p.weigh(map[ids.NodeID]uint64{a: 40, b: 30, ids.GenerateTestNodeID(): 100}, 170)
	h, _ = p.reached()
	require.Equal(uint64(500), h, "b's 30 of 170 is not enough, with a's 40 it is")
	require.NotContains(p.newest, c)
}
