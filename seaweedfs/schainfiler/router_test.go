package schainfiler_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/seaweedfs/schainfiler"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// ownedBucket is a fake network of three nodes where node 0 owns bucket
// "b", and the store's chain on it with a router that gives up after three
// attempts (so that a refused read fails instead of waiting).
func ownedBucket(t *testing.T) (*apitest.Net, *schainfiler.RouterChain, context.Context) {
	t.Helper()
	f := apitest.New(t, 3)
	f.SetOwner("b", 0)
	cfg := client.DefaultRouterConfig()
	cfg.Retry.MaxAttempts = 3
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return f, schainfiler.NewRouterChain(r), ctx
}

// TestReadsAwayFromTheOwnerNeverGoBack: while the bucket's owner cannot
// answer, the store reads at other nodes, but never at one that lags
// behind what the store already wrote: that node would answer the entry
// as missing. It is refused (NotReady below the store's height), and a
// node that caught up answers.
func TestReadsAwayFromTheOwnerNeverGoBack(t *testing.T) {
	require := require.New(t)
	f, c, ctx := ownedBucket(t)

	f.Nodes[1].Freeze() // stops following the chain before the write
	_, err := c.Put(ctx, "b", schainfiler.Write{Key: "k", Attributes: []byte("v1")})
	require.NoError(err)
	f.Nodes[0].SetDown(true) // the owner
	f.Nodes[2].SetDown(true)

	_, err = c.Get(ctx, "b", "k")
	require.ErrorIs(err, client.ErrNotReady, "the lagging node refuses; it never says the entry is missing")
	require.NotErrorIs(err, schainfiler.ErrNotFound)

	// Node 2 is set aside for a while after its failures: the router
	// reaches it again once that lapses.
	f.Nodes[2].SetDown(false)
	var rec schainfiler.Record
	require.Eventually(func() bool {
		rec, err = c.Get(ctx, "b", "k")
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "a node that accepted the write answers: %v", err)
	require.Equal("k", rec.Key)
}

// TestALyingNodeCannotStopReadsAwayFromTheOwner: a node that names a last
// accepted height far above the chain's, answering a read while the owner
// is down, must not raise the height the store asks of later reads: else
// every honest node would refuse them from then on.
func TestALyingNodeCannotStopReadsAwayFromTheOwner(t *testing.T) {
	require := require.New(t)
	f, c, ctx := ownedBucket(t)

	_, err := c.Put(ctx, "b", schainfiler.Write{Key: "k", Attributes: []byte("v1")})
	require.NoError(err)
	f.Nodes[0].SetDown(true) // the owner
	f.Nodes[2].SetDown(true)
	f.Nodes[1].ClaimHeight(1 << 40)
	_, err = c.Get(ctx, "b", "k")
	require.NoError(err, "the liar answers this read")

	f.Nodes[1].SetDown(true)
	f.Nodes[2].SetDown(false)
	require.Eventually(func() bool {
		_, err = c.Get(ctx, "b", "k")
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "an honest node that accepted the store's write still answers: %v", err)
}

// TestPutReadsThenGetAtTheOwner: a write that asks for a key back gets it
// from the owner's state after the write: a record, or a tombstone-like
// record for none.
func TestPutReadsThenGetAtTheOwner(t *testing.T) {
	require := require.New(t)
	_, c, ctx := ownedBucket(t)
	_, err := c.Put(ctx, "b", schainfiler.Write{Key: "dir", Attributes: []byte("d")})
	require.NoError(err)
	w, err := c.Put(ctx, "b", schainfiler.Write{Key: "dir\x00a", Attributes: []byte("a"), ThenGet: "dir"})
	require.NoError(err)
	require.NotNil(w.Then)
	require.Equal("dir", w.Then.Key)
	require.False(w.Then.Deleted)
	w, err = c.Put(ctx, "b", schainfiler.Write{Key: "dir\x00b", Attributes: []byte("b"), ThenGet: "none"})
	require.NoError(err)
	require.Equal(&schainfiler.Record{Key: "none", Deleted: true}, w.Then)
	w, err = c.Put(ctx, "b", schainfiler.Write{Key: "dir\x00c", Attributes: []byte("c")})
	require.NoError(err)
	require.Nil(w.Then, "not asked")
}

// TestGetReadsTheBoundChunks: a read brings back the chunks bound to the
// manifest, which a write of more chunks than a manifest binds must keep
// (TestGrowthPastMaxChunksKeepsItsChunks).
func TestGetReadsTheBoundChunks(t *testing.T) {
	require := require.New(t)
	_, c, ctx := ownedBucket(t)
	_, err := c.R.Allocate(ctx, api.AllocateArgs{Range: "b/keys/0", Count: 2})
	require.NoError(err)
	chunks := []schainfiler.Chunk{{Range: "b/keys/0", ID: 0, Size: 5}, {Range: "b/keys/0", ID: 1, Size: 7}}
	_, err = c.Put(ctx, "b", schainfiler.Write{Key: "k", Attributes: []byte("v"), Chunks: chunks})
	require.NoError(err)
	rec, err := c.Get(ctx, "b", "k")
	require.NoError(err)
	require.Equal(chunks, rec.Chunks)
}
