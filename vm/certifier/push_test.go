package certifier

import (
	"bytes"
	"testing"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/block"
)

type noBlocks struct{}

func (noBlocks) AcceptedAt(uint64) (*block.Block, error) { return nil, database.ErrNotFound }

// TestPushesStayBounded: a node keeps at most one pushed signature per
// validator and height, only from the newest set's validators, and only
// for heights above its certificate and within pushAhead of its last
// accepted block; everything else is refused with its reason.
func TestPushesStayBounded(t *testing.T) {
	require := require.New(t)
	c, err := New(Config{}, memdb.New(), noBlocks{}, &block.Block{Height: 100})
	require.NoError(err)
	c.certified = 90
	member, stranger := ids.GenerateTestNodeID(), ids.GenerateTestNodeID()
	c.members = set.Of(member)
	sig := bytes.Repeat([]byte{1}, bls.SignatureLen)

	require.Equal("malformed", c.keepPush(member, encodePush(95, sig[1:])))
	require.Equal("malformed", c.keepPush(member, nil))
	require.Equal("not_a_validator", c.keepPush(stranger, encodePush(95, sig)))
	require.Equal("outside_window", c.keepPush(member, encodePush(90, sig)), "already certified")
	require.Equal("outside_window", c.keepPush(member, encodePush(100+pushAhead+1, sig)), "too far ahead")
	require.Equal("", c.keepPush(member, encodePush(100+pushAhead, sig)))
	require.Equal("", c.keepPush(member, encodePush(95, sig)))
	require.Equal("duplicate", c.keepPush(member, encodePush(95, sig)))

	c.last = &block.Block{Height: 100 + 3*pushAhead}
	c.certified = 100
	require.Equal("outside_window", c.keepPush(member, encodePush(100+pushAhead, sig)), "too far behind")

	// A flood of every height a member may push: bounded by the window.
	for h := uint64(0); h < 10*pushAhead; h++ {
		c.keepPush(member, encodePush(c.last.Height-pushAhead+h, sig))
	}
	kept := 0
	for _, byNode := range c.pushed {
		kept += len(byNode)
	}
	require.LessOrEqual(kept, 2*pushAhead+1+2, "the window and the two kept before it")
}
