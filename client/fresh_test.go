package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// lagged is a network of four equal validators whose node 1 stopped
// following the chain one reservation ago: "p/keys/0" is at 99 there and
// at 3,145,827 on the others (issue 30, finding 1's numbers).
func lagged(t *testing.T) (*apitest.Net, *client.Router) {
	ctx := testCtx(t)
	f := apitest.New(t, 4)
	r := newRouter(t, f)
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "p/keys/0", Count: 99, Wait: api.WaitAccepted})
	require.NoError(t, err)
	f.Nodes[1].Freeze()
	for range 3 {
		_, err = r.Allocate(ctx, api.AllocateArgs{Range: "p/keys/0", Count: 1 << 20, Wait: api.WaitAccepted})
		require.NoError(t, err)
	}
	return f, r
}

// TestFreshReadsNeverGoBack: a read through any one node may come from a
// node that lags, and a rollback that took its counter would let the stock
// sequencer issue keys a second time. A fresh read takes the largest
// counter (the newest view) of nodes holding more than 2/3 of the stake.
func TestFreshReadsNeverGoBack(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f, r := lagged(t)
	const want = 99 + 3<<20

	lowest := uint64(want)
	for range 4 {
		a, err := r.GetAllocation(ctx, "p/keys/0")
		require.NoError(err)
		lowest = min(lowest, a.Next)
	}
	require.Equal(uint64(99), lowest, "a plain read rotates through the lagging node")

	fresh := r.Fresh()
	for range 8 {
		a, err := fresh.GetAllocation(ctx, "p/keys/0")
		require.NoError(err)
		require.Equal(uint64(want), a.Next)
	}
	m, err := fresh.GetMembership(ctx)
	require.NoError(err)
	head, err := fresh.Newest(ctx)
	require.NoError(err)
	require.Equal(head, m.Head, "the newest view")
	require.Positive(head.AcceptedHeight)

	// At least the newest height: the lagging node does not answer.
	a, err := fresh.GetAllocationAt(ctx, "p/keys/0", head.AcceptedHeight)
	require.NoError(err)
	require.Equal(uint64(want), a.Next)
	require.Positive(f.Nodes[1].Count("getAllocation"), "asked, and not taken")
}

// TestFreshReadsNeedAQuorumOfTheStake: nodes that say they lag do not
// count, and when those that answer hold at most 2/3 of the stake the read
// is refused (ErrNoQuorum) rather than answered; weights, not nodes,
// count.
func TestFreshReadsNeedAQuorumOfTheStake(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f, r := lagged(t)
	f.Nodes[1].Thaw()
	f.Nodes[2].SetNotReady("bootstrapping")
	fresh := r.Fresh()
	_, err := fresh.GetAllocation(ctx, "p/keys/0")
	require.NoError(err, "three of four")

	f.Nodes[3].SetNotReady("behind_peers")
	_, err = fresh.GetAllocation(ctx, "p/keys/0")
	require.ErrorIs(err, client.ErrNoQuorum, "two of four")
	require.ErrorIs(err, client.ErrNotReady, "retryable")
	_, err = fresh.Newest(ctx)
	require.ErrorIs(err, client.ErrNoQuorum)

	// Node 0 holds most of the stake, by the caller's own view of the
	// P-chain: it and node 1 are a quorum.
	cfg := fastRouterConfig()
	cfg.Stake = func(context.Context) (map[api.NodeID]uint64, error) {
		return map[api.NodeID]uint64{f.Nodes[0].ID: 10, f.Nodes[1].ID: 1, f.Nodes[2].ID: 1, f.Nodes[3].ID: 1}, nil
	}
	weighted, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(err)
	_, err = weighted.Fresh().GetAllocation(ctx, "p/keys/0")
	require.NoError(err, "11 of 13")
	f.Nodes[0].SetNotReady("bootstrapping")
	f.Nodes[2].SetNotReady("")
	f.Nodes[3].SetNotReady("")
	_, err = weighted.Fresh().GetAllocation(ctx, "p/keys/0")
	require.ErrorIs(err, client.ErrNoQuorum, "three nodes of four, 3 of 13")
}

// TestFreshReadsDoNotWaitForAPausedNode: a node whose chain process is
// stopped takes requests and answers none; once the others hold a quorum,
// a fresh read waits a short grace for it, not a whole request timeout.
func TestFreshReadsDoNotWaitForAPausedNode(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f, r := lagged(t)
	f.Nodes[1].Thaw()
	f.Nodes[1].Pause()
	t.Cleanup(f.Nodes[1].Resume)
	start := time.Now()
	a, err := r.Fresh().GetAllocation(ctx, "p/keys/0")
	require.NoError(err)
	require.Equal(uint64(99+3<<20), a.Next)
	require.Less(time.Since(start), client.DefaultConfig().Timeout/2, "answered without the paused node")
}
