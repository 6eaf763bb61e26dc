package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// TestWriteWaitsForTheMove (issue 43): the owner of a range dies; its
// ranges move once the liveness membership drops it, K+1 rounds later plus
// the dead validator's proposer slots. A write in the meantime must wait
// for the move within that bound, not give up once its retry attempts run
// out (a filer-store write gave up 7 s after the kill, before the owner
// moved at 11 s, and the S3 gateway answered 500).
func TestWriteWaitsForTheMove(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f, r := ownerGoesDown(t, 100, 2*time.Second)
	moved := time.AfterFunc(400*time.Millisecond, func() { f.MoveOwner("b", 1) })
	t.Cleanup(func() { moved.Stop() })
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "b", Count: 1, Wait: api.WaitAccepted})
	require.NoError(err, "the write waits for the move")
	require.Equal(1, f.Owner("b"))
}

// TestWriteGivesUpAfterTheFailoverBound: when nothing moves, a write whose
// owner is down gives up once the failover bound ((K+1) rounds and the
// slack for proposer slots) has passed, naming why.
func TestWriteGivesUpAfterTheFailoverBound(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	_, r := ownerGoesDown(t, 50, 200*time.Millisecond)
	start := time.Now()
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "b", Count: 1, Wait: api.WaitAccepted})
	require.ErrorIs(err, client.ErrTransport)
	require.ErrorContains(err, "failover bound")
	require.GreaterOrEqual(time.Since(start), 300*time.Millisecond, "(K+1) rounds and the slack")
}

// ownerGoesDown is three fake nodes with rounds of roundMs and K=1, a
// router with the given failover slack that wrote range "b" at its owner,
// node 0, and node 0 then down.
func ownerGoesDown(t *testing.T, roundMs uint64, slack time.Duration) (*apitest.Net, *client.Router) {
	t.Helper()
	f := apitest.New(t, 3)
	f.SetMembership(api.MembershipReply{RoundDurationMs: roundMs, LivenessRounds: 1})
	f.SetOwner("b", 0)
	cfg := fastRouterConfig()
	cfg.FailoverSlack = slack
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(t, err)
	_, err = r.Allocate(testCtx(t), api.AllocateArgs{Range: "b", Count: 1, Wait: api.WaitAccepted})
	require.NoError(t, err)
	f.Nodes[0].SetDown(true)
	return f, r
}
