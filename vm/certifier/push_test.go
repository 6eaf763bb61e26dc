package certifier

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs/txstest"
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

	c.recent = []*block.Block{{Height: 100 + 3*pushAhead}}
	c.certified = 100
	require.Equal("outside_window", c.keepPush(member, encodePush(100+pushAhead, sig)), "too far behind")

	// A flood of every height a member may push: bounded by the window.
	for h := uint64(0); h < 10*pushAhead; h++ {
		c.keepPush(member, encodePush(c.lastHeight()-pushAhead+h, sig))
	}
	kept := 0
	for _, byNode := range c.pushed {
		kept += len(byNode)
	}
	require.LessOrEqual(kept, 2*pushAhead+1+2, "the window and the two kept before it")
}

// set is a validator set of keys of equal weight, at every P-chain height.
type keySet []*txstest.Key

func (s keySet) GetValidatorSet(context.Context, uint64, ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	out := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, k := range s {
		out[k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, Weight: 10, PublicKey: k.PublicKey()}
	}
	return out, nil
}

// pushed is a running certifier of the first of n equal validators that
// accepted two blocks after first, ready to keep pushes; statement is the
// older block's statement, which the others sign.
type pushed struct {
	c            *Certifier
	keys         []*txstest.Key
	older, newer *block.Block
	statement    *warp.UnsignedMessage
}

func newPushed(t *testing.T, n int) *pushed {
	require := require.New(t)
	keys, err := txstest.NewKeys("open", n)
	require.NoError(err)
	chainID := ids.ID{'c'}
	first, err := block.New(ids.ID{'p'}, 4, 1, true, 10, ids.ID{'r', 4}, nil, block.DefaultLimits())
	require.NoError(err)
	c := startOn(t, keys, memdb.New(), first)

	older, err := block.New(first.ID(), 5, 2, true, 10, ids.ID{'r', 5}, nil, block.DefaultLimits())
	require.NoError(err)
	newer, err := block.New(older.ID(), 6, 3, true, 10, ids.ID{'r', 6}, nil, block.DefaultLimits())
	require.NoError(err)
	c.Accepted(older)
	c.Accepted(newer)
	st, ok := Statement(5, chainID, older)
	require.True(ok)
	msg, err := st.Message()
	require.NoError(err)
	// Pushes are kept from members only: wait until the certifier knows
	// the set (it learns it pushing its own signatures).
	require.Eventually(func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.members.Contains(keys[1].NodeID)
	}, 10*time.Second, time.Millisecond)
	return &pushed{c: c, keys: keys, older: older, newer: newer, statement: msg}
}

// push has validator i push its signature of the older block.
func (p *pushed) push(t *testing.T, i int) {
	sig, err := p.keys[i].Signer(5, ids.ID{'c'}).Sign(p.statement)
	require.NoError(t, err)
	require.Empty(t, p.c.keepPush(p.keys[i].NodeID, encodePush(p.older.Height, sig)))
}

// TestEachBlockIsCertifiedWhenItsSignaturesArrive: with two blocks accepted
// and the others' signatures pushed for the older one only, the older one
// is certified without waiting for the newer one's (which a validator that
// accepted both at once would otherwise hold back).
func TestEachBlockIsCertifiedWhenItsSignaturesArrive(t *testing.T) {
	require := require.New(t)
	p := newPushed(t, 3)
	p.push(t, 1)
	p.push(t, 2)
	require.Eventually(func() bool { return p.c.Certified() == p.older.Height }, 10*time.Second, time.Millisecond)
	cert, err := p.c.Covering(p.older.Height)
	require.NoError(err)
	require.Equal(p.older.ID(), cert.BlockID)
}

// TestUndecodablePushesAreDropped: a validator pushing 96 bytes that are
// no BLS signature is counted and left out; the other three of four
// certify without it.
func TestUndecodablePushesAreDropped(t *testing.T) {
	require := require.New(t)
	p := newPushed(t, 4)
	require.Empty(p.c.keepPush(p.keys[3].NodeID, encodePush(p.older.Height, bytes.Repeat([]byte{0xff}, bls.SignatureLen))))
	p.push(t, 1)
	p.push(t, 2)
	require.Eventually(func() bool { return p.c.Certified() == p.older.Height }, 10*time.Second, time.Millisecond)
	cert, err := p.c.Covering(p.older.Height)
	require.NoError(err)
	require.Equal(3, set.BitsFromBytes(cert.Signers).Len(), "the three who signed, not the one who pushed junk")
	var m dto.Metric
	require.NoError(p.c.metrics.refusals.WithLabelValues("bad_signature").Write(&m))
	require.Equal(1.0, m.GetCounter().GetValue())
}

// heightSets gives a different validator set at each P-chain height.
type heightSets map[uint64]keySet

func (s heightSets) GetValidatorSet(ctx context.Context, h uint64, subnet ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	return s[h].GetValidatorSet(ctx, h, subnet)
}

// gossips records where pushes went.
type gossips struct {
	mu sync.Mutex
	to []set.Set[ids.NodeID]
}

func (g *gossips) AppGossip(_ context.Context, cfg common.SendConfig, _ []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.to = append(g.to, cfg.NodeIDs)
	return nil
}

func (g *gossips) sent() []set.Set[ids.NodeID] {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.to)
}

// TestPushesFollowTheValidatorSet: pushes go to the validator set of each
// block's P-chain height and are kept from its members only, so a
// validator added at a later P-chain height is pushed to and heard from
// once blocks of that height are accepted, and one removed is not.
func TestPushesFollowTheValidatorSet(t *testing.T) {
	require := require.New(t)
	keys, err := txstest.NewKeys("sets", 4)
	require.NoError(err)
	chainID := ids.ID{'c'}
	sets := heightSets{10: keySet(keys[:3]), 11: keySet{keys[0], keys[1], keys[3]}}
	first, err := block.New(ids.ID{'p'}, 4, 1, true, 10, ids.ID{'r', 4}, nil, block.DefaultLimits())
	require.NoError(err)
	c, err := New(Config{NetworkID: 5, ChainID: chainID, NodeID: keys[0].NodeID, Signer: keys[0].Signer(5, chainID), Validators: sets},
		memdb.New(), noBlocks{}, first)
	require.NoError(err)
	g := &gossips{}
	c.Start(nil, g)
	t.Cleanup(c.Stop)

	parent := first
	accept := func(pChainHeight uint64) {
		b, err := block.New(parent.ID(), parent.Height+1, parent.Timestamp+1, true, pChainHeight, ids.ID{'r', byte(parent.Height)}, nil, block.DefaultLimits())
		require.NoError(err)
		c.Accepted(b)
		parent = b
	}
	accept(10)
	accept(10)
	require.Eventually(func() bool { return len(g.sent()) == 2 }, 10*time.Second, time.Millisecond)
	for _, to := range g.sent() {
		require.Equal(set.Of(keys[1].NodeID, keys[2].NodeID), to)
	}
	require.Equal("not_a_validator", c.keepPush(keys[3].NodeID, encodePush(parent.Height, make([]byte, bls.SignatureLen))))

	accept(11)
	require.Eventually(func() bool { return len(g.sent()) == 3 }, 10*time.Second, time.Millisecond)
	require.Equal(set.Of(keys[1].NodeID, keys[3].NodeID), g.sent()[2], "the set of the block's P-chain height")
	require.Empty(c.keepPush(keys[3].NodeID, encodePush(parent.Height, make([]byte, bls.SignatureLen))), "added at P-chain height 11")
	require.Equal("not_a_validator", c.keepPush(keys[2].NodeID, encodePush(parent.Height, make([]byte, bls.SignatureLen))), "removed at P-chain height 11")
}
