package schainseq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// newChain is the fake S-Chain of these tests: n nodes, ranges spread over
// the nodes up, writes with apitest.Token, receipts final once accepted,
// each allocation's entry after another's (a group commit).
func newChain(t testing.TB, n int) *apitest.Net {
	c := apitest.New(t, n)
	c.SpreadOwners()
	c.PadEntries(1)
	c.RequireToken(apitest.Token)
	c.SetFinalAfter(0)
	return c
}

func newTestClient(t *testing.T, c *apitest.Net, token string) *chainClient {
	cfg := DefaultConfig(t.TempDir())
	cfg.RPC, cfg.Chain, cfg.Token, cfg.RequestTimeout = c.URIs(), c.ChainID.String(), token, time.Second
	cl, err := newChainClient(cfg)
	require.NoError(t, err)
	return cl
}

func TestReserveRoutesToTheOwnerAndHonoursTheFloor(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	cl := newTestClient(t, chain, apitest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	owners := map[int]bool{}
	for i := range 12 {
		rng := KeyRange("c", uint32(i), 1)
		owners[chain.Owner(rng)] = true
		r, err := cl.Reserve(ctx, rng, 100, 5000, false)
		require.NoError(err)
		require.Equal(rng, r.Range)
		require.Equal(uint64(5000), r.Base, "a fresh range starts at the floor")
		require.Equal(uint64(100), r.Count)
		require.Equal(chain.Nodes[chain.Owner(rng)].ID.String(), r.Owner)
		r2, err := cl.Reserve(ctx, rng, 10, 5000, false)
		require.NoError(err)
		require.Equal(uint64(5100), r2.Base, "the counter moved past the first reservation")
	}
	require.Len(owners, 3, "the ranges spread over the nodes")
	require.NoError(chain.CheckUnique())
}

func TestReserveRetriesNotReadyAndFollowsAMovedOwner(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	cl := newTestClient(t, chain, apitest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	chain.SetNotReady(3)
	_, err := cl.Reserve(ctx, "r", 1, 0, false)
	require.NoError(err, "NotReady is retried")

	// The owner dies: the client re-resolves and reaches the new owner.
	victim := chain.Owner("r")
	chain.Nodes[victim].SetDown(true)
	res, err := cl.Reserve(ctx, "r", 1, 0, false)
	require.NoError(err)
	require.NotEqual(chain.Nodes[victim].ID.String(), res.Owner)
	require.NoError(chain.CheckUnique())
}

func TestReserveFailsForGoodWithoutAValidToken(t *testing.T) {
	chain := newChain(t, 1)
	cl := newTestClient(t, chain, "wrong")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := cl.Reserve(ctx, "r", 1, 0, false)
	require.ErrorIs(t, err, client.ErrUnauthorized)
	require.Less(t, time.Since(start), 5*time.Second, "a refusal is not retried until the deadline")
	require.Equal(t, 1, chain.Calls("allocate"))
}

func TestReserveGivesUpAtTheDeadlineWhenNoNodeAnswers(t *testing.T) {
	chain := newChain(t, 2)
	chain.Nodes[0].SetDown(true)
	chain.Nodes[1].SetDown(true)
	cl := newTestClient(t, chain, apitest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := cl.Reserve(ctx, "r", 1, 0, false)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, client.ErrTransport, "the last error says why")
	require.Empty(t, chain.Issued())
}

func TestPooledAndNext(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 2)
	cl := newTestClient(t, chain, apitest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, err := cl.Floor(ctx, "p")
	require.NoError(err)
	require.Zero(next)
	a, err := cl.Pooled(ctx, "p", 3)
	require.NoError(err)
	b, err := cl.Pooled(ctx, "p", 3)
	require.NoError(err)
	require.Equal(a.End(), b.Base)
	next, err = cl.Floor(ctx, "p")
	require.NoError(err)
	require.Equal(uint64(apitest.PoolChunk), next, "the pool's chunk is committed")
}

// TestFloorNeverComesFromALaggingNode (issue 30: every floor read is
// fresh): a node that stopped following the chain before the cutover
// recorded the floor answers an older floor; alone it is refused, never
// taken. Once read fresh, the floor holds without a quorum.
func TestFloorNeverComesFromALaggingNode(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 4)
	cl := newTestClient(t, chain, apitest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	chain.SetCounter("f", 100)
	chain.Nodes[3].Freeze()
	chain.SetCounter("f", 5_000_000) // a later cutover's floor
	for _, i := range []int{0, 1, 2} {
		chain.Nodes[i].SetDown(true)
	}
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	_, err := cl.Floor(short, "f")
	require.ErrorIs(err, client.ErrNoQuorum, "one node of four is not a quorum of the stake")
	chain.Nodes[0].SetDown(false)
	chain.Nodes[1].SetDown(false)
	f, err := cl.Floor(ctx, "f")
	require.NoError(err)
	require.Equal(uint64(5_000_000), f, "the newest floor, not the lagging node's")
	chain.Nodes[0].SetDown(true)
	chain.Nodes[1].SetDown(true)
	f, err = cl.Floor(ctx, "f")
	require.NoError(err)
	require.Equal(uint64(5_000_000), f, "a floor once read holds")
}
