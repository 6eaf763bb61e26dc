package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// fastRouterConfig keeps back-offs in milliseconds so retry tests stay fast.
func fastRouterConfig() client.RouterConfig {
	cfg := client.DefaultRouterConfig()
	cfg.Retry = client.Retry{Initial: time.Millisecond, Max: 5 * time.Millisecond, MaxAttempts: 10, MaxRetryAfter: time.Second}
	cfg.FreshSettle = 200 * time.Millisecond
	return cfg
}

func newRouter(t *testing.T, f *apitest.Net) *client.Router {
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), fastRouterConfig())
	require.NoError(t, err)
	return r
}

// TestRouterRoutesToOwner: the owner is learnt through getOwner and the
// endpoints' getNode, then cached per (range, epoch).
func TestRouterRoutesToOwner(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 3)
	f.SetOwner("b", 1)
	f.SetOwner("c", 2)
	r := newRouter(t, f)

	for i, rng := range []string{"a", "b", "c"} {
		reply, err := r.Allocate(ctx, api.AllocateArgs{Range: rng, Count: 1})
		require.NoError(err)
		require.Equal(f.Nodes[i].ID, reply.Owner)
	}
	for i := range f.Nodes {
		require.Equal(1, f.Nodes[i].Count("allocate"), "no request reached a non-owner")
	}
	getOwners := 0
	for _, n := range f.Nodes {
		getOwners += n.Count("getOwner")
	}
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "c", Count: 1})
	require.NoError(err)
	after := 0
	for _, n := range f.Nodes {
		after += n.Count("getOwner")
	}
	require.Equal(getOwners, after, "the owner is cached")
	require.Equal(2, f.Nodes[2].Count("allocate"))
}

// TestRouterFollowsNotOwner: after an epoch change the cached owner is
// wrong; its NotOwner hint is followed without back-off.
func TestRouterFollowsNotOwner(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 3)
	r := newRouter(t, f)
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "hot", Count: 1})
	require.NoError(err)
	require.Equal(1, f.Nodes[0].Count("allocate"))

	f.SetOwner("hot", 2)
	reply, err := r.PutManifest(ctx, api.PutManifestArgs{Bucket: "hot", Key: "k", ContentHash: api.ID(ids.GenerateTestID())})
	require.NoError(err)
	require.Equal(f.Nodes[2].ID, reply.Owner)
	require.Equal(1, f.Nodes[0].Count("putManifest"), "the stale owner was asked once")
	require.Equal(1, f.Nodes[2].Count("putManifest"))

	// The hint's epoch is now cached: the next write goes straight there.
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "hot", Count: 1})
	require.NoError(err)
	require.Equal(1, f.Nodes[0].Count("allocate"))
	require.Equal(1, f.Nodes[2].Count("allocate"))
}

// TestRouterOwnerNotConfigured: with only some nodes' URIs the client cannot
// reach the owner; it says who the owner is instead of writing elsewhere.
func TestRouterOwnerNotConfigured(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 2)
	f.SetOwner("x", 1)
	r, err := client.NewRouter(f.URIs()[:1], f.ChainID.String(), fastRouterConfig())
	require.NoError(err)
	_, err = r.Allocate(testCtx(t), api.AllocateArgs{Range: "x", Count: 1})
	require.ErrorIs(err, client.ErrNoRoute)
	hint, ok := client.IsNotOwner(err)
	require.True(ok)
	require.Equal(f.Nodes[1].ID, hint.Owner)
	require.Equal(1, f.Nodes[0].Count("allocate"))
}

func TestRouterRetriesTransient(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 2)
	r := newRouter(t, f)
	owner := f.Nodes[0]

	owner.FailNext("allocate", apitest.RPCError(api.CodeNotReady, "no epoch", nil), apitest.RPCError(api.CodeNotReady, "no epoch", nil))
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err)
	require.Equal(3, owner.Count("allocate"))

	owner.FailNext("allocate", apitest.RPCError(api.CodeMempoolFull, "full", api.RetryData{RetryAfterMs: 40}))
	start := time.Now()
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err)
	require.GreaterOrEqual(time.Since(start), 40*time.Millisecond, "RetryAfterMs honoured")
	require.Equal(5, owner.Count("allocate"))

	owner.FailHTTP(2)
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err, "an owner briefly answering 503 is retried, never replaced")
	require.Equal(0, f.Nodes[1].Count("allocate"))
}

func TestRouterFinalErrorsNotRetried(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"rejected", apitest.RPCError(api.CodeRejected, "no", api.RejectedData{Reason: "unallocated_chunk"}), client.ErrRejected},
		{"invalid params", apitest.RPCError(api.CodeInvalidParams, "bad", nil), client.ErrInvalidParams},
		{"timeout", apitest.RPCError(api.CodeTimeout, "ran out", nil), client.ErrTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := apitest.New(t, 1)
			r := newRouter(t, f)
			f.Nodes[0].FailNext("putManifest", tt.err)
			_, err := r.PutManifest(testCtx(t), api.PutManifestArgs{Bucket: "b", Key: "k"})
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, 1, f.Nodes[0].Count("putManifest"))
		})
	}
}

func TestRouterDeadline(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 1)
	cfg := fastRouterConfig()
	cfg.Retry.MaxAttempts = 1 << 20
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(err)
	notReady := make([]error, 10000)
	for i := range notReady {
		notReady[i] = apitest.RPCError(api.CodeNotReady, "no epoch", nil)
	}
	f.Nodes[0].FailNext("allocate", notReady...)

	ctx, cancel := context.WithTimeout(testCtx(t), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.ErrorIs(err, context.DeadlineExceeded)
	require.ErrorIs(err, client.ErrNotReady, "the last error is kept")
	require.Less(time.Since(start), time.Second)

	// A back-off longer than the time left is not slept through. Several
	// answers are queued: the first call's last request, which its
	// deadline cut off on the client's side, may still reach the node
	// after this and take one.
	full := make([]error, 8)
	for i := range full {
		full[i] = apitest.RPCError(api.CodeMempoolFull, "full", api.RetryData{RetryAfterMs: 5000})
	}
	f.Nodes[0].SetInject("allocate", full...)
	ctx, cancel = context.WithTimeout(testCtx(t), time.Second)
	defer cancel()
	start = time.Now()
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
	require.ErrorIs(err, context.DeadlineExceeded)
	require.ErrorIs(err, client.ErrMempoolFull)
	require.Less(time.Since(start), 500*time.Millisecond)
}

func TestRouterMaxAttempts(t *testing.T) {
	f := apitest.New(t, 1)
	r := newRouter(t, f)
	errs := make([]error, 20)
	for i := range errs {
		errs[i] = apitest.RPCError(api.CodeNotReady, "no epoch", nil)
	}
	f.Nodes[0].FailNext("getMembership", errs...)
	_, err := r.GetMembership(testCtx(t))
	require.ErrorIs(t, err, client.ErrNotReady)
	require.ErrorContains(t, err, "gave up after 10 attempts")
	require.Equal(t, 10, f.Nodes[0].Count("getMembership"))
}

// TestRouterReadsSkipDeadNodes: reads go to any node that answers.
func TestRouterReadsSkipDeadNodes(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 3)
	f.Nodes[0].Close()
	f.Nodes[1].Close()
	cfg := fastRouterConfig()
	cfg.FailoverSlack = 50 * time.Millisecond
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(err)
	for range 5 {
		e, err := r.GetMembership(testCtx(t))
		require.NoError(err)
		require.Equal(f.Nodes[2].ID, e.NodeID)
	}
	// Writes to a dead owner fail once the failover bound has passed
	// without a move (no other node may write its range).
	f.SetMembership(api.MembershipReply{RoundDurationMs: 10, LivenessRounds: 1})
	_, err = r.Allocate(testCtx(t), api.AllocateArgs{Range: "owned-by-dead-node-0", Count: 1})
	require.ErrorIs(err, client.ErrTransport)
}

// TestRouterWrongChain: a node serving another chain at the path is refused.
func TestRouterWrongChain(t *testing.T) {
	f := apitest.New(t, 1)
	r := newRouter(t, f)
	f.ReportChain(api.ID(ids.GenerateTestID())) // what getNode reports from now on
	_, err := r.GetNode(testCtx(t))
	require.ErrorIs(t, err, client.ErrWrongChain)
}

func TestWaitForReceipt(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 2)
	r := newRouter(t, f)
	a, b, c := api.ID(ids.GenerateTestID()), api.ID(ids.GenerateTestID()), api.ID(ids.GenerateTestID())
	f.AddReceipt(api.ReceiptReply{TxID: a, Status: api.StatusPending, ReplacedBy: &b}, 1)
	f.AddReceipt(api.ReceiptReply{TxID: b, Status: api.StatusPending, ReplacedBy: &c}, 0)
	f.AddReceipt(api.ReceiptReply{TxID: c, Status: api.StatusAccepted, Height: 9}, 3)

	rc, err := r.WaitForReceipt(testCtx(t), a)
	require.NoError(err)
	require.Equal(c, rc.TxID)
	require.Equal(api.StatusAccepted, rc.Status)

	d := api.ID(ids.GenerateTestID())
	f.AddReceipt(api.ReceiptReply{TxID: d, Status: api.StatusRejected, Error: "wrong epoch"}, 2)
	rc, err = r.WaitForReceipt(testCtx(t), d)
	require.ErrorIs(err, client.ErrTxRejected)
	require.ErrorContains(err, "wrong epoch")
	require.Equal(api.StatusRejected, rc.Status)

	// A loop of replacements is reported, not followed forever.
	x, y := api.ID(ids.GenerateTestID()), api.ID(ids.GenerateTestID())
	f.AddReceipt(api.ReceiptReply{TxID: x, Status: api.StatusPending, ReplacedBy: &y}, 0)
	f.AddReceipt(api.ReceiptReply{TxID: y, Status: api.StatusPending, ReplacedBy: &x}, 0)
	_, err = r.WaitForReceipt(testCtx(t), x)
	require.ErrorContains(err, "loops")

	// Never decided: the context bounds the wait and the last receipt is kept.
	ctx, cancel := context.WithTimeout(testCtx(t), 100*time.Millisecond)
	defer cancel()
	rc, err = r.WaitForReceipt(ctx, api.ID(ids.GenerateTestID()))
	require.ErrorIs(err, context.DeadlineExceeded)
	require.Equal(api.StatusUnknown, rc.Status)
}

// concurrently runs clients goroutines of each calls to call(client,
// call) and requires every call to succeed.
func concurrently(t *testing.T, clients, each int, call func(g, i int) error) {
	errs := make(chan error, clients*each)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- call(g, i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestRouterConcurrent: many writers over ranges owned by different nodes;
// every request reaches its owner and ids never overlap (run with -race).
func TestRouterConcurrent(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 3)
	ranges := []string{"r0", "r1", "r2", "r3"}
	for i, rng := range ranges {
		f.SetOwner(rng, i%3)
	}
	r := newRouter(t, f)
	ctx := testCtx(t)
	concurrently(t, 8, 8, func(g, i int) error {
		_, err := r.Allocate(ctx, api.AllocateArgs{Range: ranges[(g+i)%len(ranges)], Count: 2})
		return err
	})
	for _, rng := range ranges {
		a, err := r.GetAllocation(ctx, rng)
		require.NoError(err)
		require.Equal(uint64(2*16), a.Next)
	}
	total := 0
	for _, n := range f.Nodes {
		total += n.Count("allocate")
	}
	require.Equal(64, total, "no NotOwner detours: the owner was known before each write")
}

// TestAllocateCommitted: the committed ids are the entry of the accepted
// receipt, through the range's owner.
func TestAllocateCommitted(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 2)
	f.SetOwner("photos", 1)
	r := newRouter(t, f)
	first, err := r.AllocateCommitted(testCtx(t), api.AllocateArgs{Range: "photos", Count: 4, Floor: 10})
	require.NoError(err)
	require.Equal(api.ReceiptEntry{Range: "photos", Base: 10, Count: 4}, first.Entry)
	require.Equal(api.StatusAccepted, first.Receipt.Status)
	require.Equal(f.Nodes[1].ID, first.Reply.Owner)
	next, err := r.AllocateCommitted(testCtx(t), api.AllocateArgs{Range: "photos", Count: 2})
	require.NoError(err)
	require.Equal(uint64(14), next.Entry.Base, "continues from the committed counter")

	// The owner changes before the transaction's block: it is rejected
	// without effect, and the request goes again, to the new owner.
	f.MoveDuringNextAllocate("photos", 0)
	moved, err := r.AllocateCommitted(testCtx(t), api.AllocateArgs{Range: "photos", Count: 3})
	require.NoError(err)
	require.Equal(api.ReceiptEntry{Range: "photos", Base: 16, Count: 3}, moved.Entry)
	require.Equal(f.Nodes[0].ID, moved.Reply.Owner)
}

// TestRouterBatchesPooled: with PooledBatches, concurrent pooled
// allocations are answered as allocate would answer each: its own ids
// reserved once, or its own error (a NotOwner hint inside a batch,
// followed to the right node).
func TestRouterBatchesPooled(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 2)
	ranges := []string{"p0", "p1", "p2", "p3"}
	for i, rng := range ranges {
		f.SetOwner(rng, i%2)
	}
	cfg := fastRouterConfig()
	cfg.PooledBatches = 1
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(err)
	ctx := testCtx(t)
	for _, rng := range ranges {
		_, err := r.GetOwner(ctx, rng) // routes known before the load
		require.NoError(err)
	}
	f.SetOwner("p3", 0) // p3 moved: its cached route answers NotOwner

	const clients, each = 16, 8
	concurrently(t, clients, each, func(g, i int) error {
		_, err := r.Allocate(ctx, api.AllocateArgs{Range: ranges[(g+i)%len(ranges)], Count: 3, Pooled: true})
		return err
	})
	cut := map[string]int{}
	for _, a := range f.Issued() {
		if a.Pooled {
			cut[a.Range]++
		}
	}
	for _, rng := range ranges {
		require.Equal(clients*each/len(ranges), cut[rng], "range %s: every request was served once", rng)
	}
	require.NoError(f.CheckUnique())
}

// TestRouterLeavesASilentOwner: an owner whose process is stopped (or whose
// link is cut) takes requests and answers none, and the membership moves
// its ranges at the same P-chain height. A caller that bounds each request
// (as SeaweedFS's masters do) must reach the new owner within a few
// requests, not keep waiting on the cached silent one; and reads must stop
// waiting on it too.
func TestRouterLeavesASilentOwner(t *testing.T) {
	require := require.New(t)
	f := apitest.New(t, 3)
	f.SetOwner("a", 0)
	r := newRouter(t, f)
	_, err := r.Allocate(testCtx(t), api.AllocateArgs{Range: "a", Count: 1})
	require.NoError(err)

	f.Nodes[0].Pause()
	t.Cleanup(f.Nodes[0].Resume)
	f.MoveOwner("a", 1)
	var got *api.AllocateReply
	for attempt := 1; got == nil; attempt++ {
		require.LessOrEqual(attempt, 3, "the router keeps sending to the silent owner")
		ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
		got, _ = r.Allocate(ctx, api.AllocateArgs{Range: "a", Count: 1})
		cancel()
	}
	require.Equal(f.Nodes[1].ID, got.Owner)

	silentReads := 0
	for range 6 {
		ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
		if _, err := r.GetMembership(ctx); err != nil {
			silentReads++
		}
		cancel()
	}
	require.LessOrEqual(silentReads, 1, "reads keep going to the silent node")
}
