package vm_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/writer"
)

var poolGenesis = []byte(`{"timestamp": 1000, "poolChunk": 64, "mempool": {"maxTxs": 64, "maxBytes": 1048576}}`)

// pooled runs n pooled requests of count ids on node i concurrently and
// builds blocks on i until all are answered, as the engine would for the
// reservations they wait for.
func (nw *net) pooled(i int, rk string, n int, count uint64) []writer.Pooled {
	type result struct {
		p   writer.Pooled
		err error
	}
	out := make(chan result, n)
	for k := 0; k < n; k++ {
		go func() {
			p, err := nw.vms[i].Writer().AllocatePooled(context.Background(), rk, count)
			out <- result{p, err}
		}()
	}
	var got []writer.Pooled
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n {
		select {
		case r := <-out:
			require.NoError(nw.t, r.err)
			got = append(got, r.p)
			continue
		case <-time.After(5 * time.Millisecond):
		}
		require.True(nw.t, time.Now().Before(deadline), "pooled requests still waiting")
		if nw.vms[i].Mempool().Len() > 0 {
			_, err := nw.round(i, 10)
			require.NoError(nw.t, err)
		}
	}
	return got
}

func disjoint(t *testing.T, ivs [][2]uint64) {
	sort.Slice(ivs, func(a, b int) bool { return ivs[a][0] < ivs[b][0] })
	for k := 1; k < len(ivs); k++ {
		require.LessOrEqual(t, ivs[k-1][1], ivs[k][0], "%v overlaps %v", ivs[k-1], ivs[k])
	}
}

// TestPooledAllocations: the owner answers pooled requests from a committed
// reservation, refills it ahead of need, and no id is ever handed out twice,
// by the pool or by ordinary allocations of the same range.
func TestPooledAllocations(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNetWith(t, 3, poolGenesis)
	nw.ready(10)
	rk := nw.rangeOf(0, "pool")

	first := nw.pooled(0, rk, 1, 5)
	require.Equal(uint64(0), first[0].Base, "the first reservation starts the range")
	rc, err := nw.vms[1].Writer().Receipt(first[0].TxID)
	require.NoError(err)
	require.Equal(api.StatusAccepted, rc.Status, "ids are handed out only from an accepted reservation")
	require.Equal(uint64(64), rc.Entries[first[0].Index].Count)

	// Served from memory: no block is needed for these.
	var ivs [][2]uint64
	ivs = append(ivs, [2]uint64{first[0].Base, first[0].Base + 5})
	for k := 0; k < 5; k++ {
		p, err := nw.vms[0].Writer().AllocatePooled(ctx, rk, 5)
		require.NoError(err)
		ivs = append(ivs, [2]uint64{p.Base, p.Base + p.Count})
	}
	require.Equal(uint64(64), counter(t, nw.vms[0], rk), "one reservation so far")

	// Concurrent requests across refills, mixed with ordinary allocations.
	for _, p := range nw.pooled(0, rk, 40, 3) {
		ivs = append(ivs, [2]uint64{p.Base, p.Base + p.Count})
	}
	tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 7}})
	require.NoError(err)
	_, err = nw.round(0, 10)
	require.NoError(err)
	rc, err = nw.vms[0].Writer().WaitReceipt(ctx, tx.ID())
	require.NoError(err)
	e := rc.Entries[0]
	ivs = append(ivs, [2]uint64{e.Base, e.Base + e.Count})
	disjoint(t, ivs)
	for _, iv := range ivs {
		require.LessOrEqual(iv[1], counter(t, nw.vms[2], rk), "every id handed out is below the committed counter")
	}

	// Only the owner pools, and only small requests.
	_, err = nw.vms[1].Writer().AllocatePooled(ctx, rk, 1)
	var noe *execute.NotOwnerError
	require.ErrorAs(err, &noe)
	var reply api.AllocateReply
	rerr := rpcCall(t, nw.server(0), "allocate", api.AllocateArgs{Range: rk, Count: 17, Pooled: true}, &reply)
	require.NotNil(rerr)
	require.Equal(api.CodeInvalidParams, rerr.Code, rerr.Message)
	rerr = rpcCall(t, nw.server(0), "allocate", api.AllocateArgs{Range: rk, Count: 1, Floor: 9, Pooled: true}, &reply)
	require.NotNil(rerr)
	require.Equal(api.CodeInvalidParams, rerr.Code, rerr.Message)
	require.Nil(rpcCall(t, nw.server(0), "allocate", api.AllocateArgs{Range: rk, Count: 2, Pooled: true}, &reply))
	require.True(reply.Pooled)
	require.Equal(uint64(2), reply.Count)
}

// TestPooledIDsAreNeverReissued: a node that restarts loses its pool; the
// ids it had not handed out are skipped, and the range continues above the
// reservation.
func TestPooledIDsAreNeverReissued(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, poolGenesis)
	nw.ready(10)
	rk := nw.rangeOf(1, "restart")
	var ivs [][2]uint64
	for _, p := range nw.pooled(1, rk, 3, 2) {
		ivs = append(ivs, [2]uint64{p.Base, p.Base + p.Count})
	}
	require.NoError(nw.vms[1].Shutdown(context.Background()))
	nw.vms[1] = nw.start(1)
	for _, p := range nw.pooled(1, rk, 3, 2) {
		require.GreaterOrEqual(p.Base, uint64(64), "the lost pool's ids are skipped")
		ivs = append(ivs, [2]uint64{p.Base, p.Base + p.Count})
	}
	disjoint(t, ivs)
}
