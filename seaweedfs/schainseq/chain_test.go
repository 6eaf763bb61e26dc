package schainseq

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/seaweedfs/schaintest"
)

func newTestClient(t *testing.T, c *schaintest.Chain, token string) *chainClient {
	cfg := DefaultConfig(t.TempDir())
	cfg.RPC, cfg.Chain, cfg.Token, cfg.RequestTimeout = c.URIs, c.ChainID.String(), token, time.Second
	cl, err := newChainClient(cfg)
	require.NoError(t, err)
	return cl
}

func TestReserveRoutesToTheOwnerAndHonoursTheFloor(t *testing.T) {
	require := require.New(t)
	chain := schaintest.New(t, 3)
	cl := newTestClient(t, chain, schaintest.Token)
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
		require.Equal(chain.NodeIDs[chain.Owner(rng)].String(), r.Owner)
		r2, err := cl.Reserve(ctx, rng, 10, 5000, false)
		require.NoError(err)
		require.Equal(uint64(5100), r2.Base, "the counter moved past the first reservation")
	}
	require.Len(owners, 3, "the ranges spread over the nodes")
	require.NoError(chain.CheckUnique())
}

func TestReserveRetriesNotReadyAndFollowsAMovedOwner(t *testing.T) {
	require := require.New(t)
	chain := schaintest.New(t, 3)
	cl := newTestClient(t, chain, schaintest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	chain.SetNotReady(3)
	_, err := cl.Reserve(ctx, "r", 1, 0, false)
	require.NoError(err, "NotReady is retried")

	// The owner dies: the client re-resolves and reaches the new owner.
	victim := chain.Owner("r")
	chain.SetDown(victim, true)
	res, err := cl.Reserve(ctx, "r", 1, 0, false)
	require.NoError(err)
	require.NotEqual(chain.NodeIDs[victim].String(), res.Owner)
	require.NoError(chain.CheckUnique())
}

func TestReserveFailsForGoodWithoutAValidToken(t *testing.T) {
	chain := schaintest.New(t, 1)
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
	chain := schaintest.New(t, 2)
	chain.SetDown(0, true)
	chain.SetDown(1, true)
	cl := newTestClient(t, chain, schaintest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := cl.Reserve(ctx, "r", 1, 0, false)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, client.ErrTransport, "the last error says why")
	require.Empty(t, chain.Issued())
}

func TestPooledAndNext(t *testing.T) {
	require := require.New(t)
	chain := schaintest.New(t, 2)
	cl := newTestClient(t, chain, schaintest.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next, err := cl.NextMax(ctx, "p")
	require.NoError(err)
	require.Zero(next)
	a, err := cl.Pooled(ctx, "p", 3)
	require.NoError(err)
	b, err := cl.Pooled(ctx, "p", 3)
	require.NoError(err)
	require.Equal(a.End(), b.Base)
	next, err = cl.NextMax(ctx, "p")
	require.NoError(err)
	require.Equal(uint64(schaintest.PoolChunk), next, "the pool's chunk is committed")
}
