package vm_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
)

// TestAllocateBatch: each request of a batch is answered as allocate would
// answer it alone (pooled ids, a transaction, or its own error, at its own
// index), pooled ids of a batch never overlap ids handed out before or
// after it, and a batch outside 1..MaxBatch is refused whole.
func TestAllocateBatch(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, poolGenesis)
	nw.ready(10)
	rk := nw.rangeOf(0, "batch")
	other := nw.rangeOf(1, "batch")
	url := nw.server(0)

	var ivs [][2]uint64
	for _, p := range nw.pooled(0, rk, 1, 3) {
		ivs = append(ivs, [2]uint64{p.Base, p.Base + p.Count})
	}
	reqs := []api.AllocateArgs{
		{Range: rk, Count: 2, Pooled: true},
		{Range: other, Count: 1, Pooled: true}, // not this node's
		{Range: rk, Count: 0, Pooled: true},    // invalid
		{Range: rk, Count: 4, Pooled: true},
		{Range: rk, Count: 1}, // a transaction, not waited for
	}
	var reply api.AllocateBatchReply
	require.Nil(rpcCall(t, url, "allocateBatch", api.AllocateBatchArgs{Requests: reqs}, &reply))
	require.Len(reply.Results, len(reqs))
	for _, i := range []int{0, 3} {
		r := reply.Results[i]
		require.Nil(r.Error, "request %d", i)
		require.True(r.Reply.Pooled)
		require.Equal(reqs[i].Count, r.Reply.Count)
		ivs = append(ivs, [2]uint64{r.Reply.Base, r.Reply.Base + r.Reply.Count})
	}
	require.Nil(reply.Results[1].Reply)
	require.Equal(api.CodeNotOwner, reply.Results[1].Error.Code, "the non-owned range answers NotOwner with its hint")
	raw, err := json.Marshal(reply.Results[1].Error.Data)
	require.NoError(err)
	var hint api.NotOwnerData
	require.NoError(json.Unmarshal(raw, &hint))
	require.Equal(api.NodeID(nw.keys[1].NodeID), hint.Owner)
	require.Equal(api.CodeInvalidParams, reply.Results[2].Error.Code)
	require.Nil(reply.Results[4].Error)
	require.False(reply.Results[4].Reply.Pooled)
	require.NotEqual(reply.Results[4].Reply.TxID, reply.Results[0].Reply.TxID, "the non-pooled request signed its own transaction")

	var single api.AllocateReply
	require.Nil(rpcCall(t, url, "allocate", api.AllocateArgs{Range: rk, Count: 5, Pooled: true}, &single))
	ivs = append(ivs, [2]uint64{single.Base, single.Base + single.Count})
	disjoint(t, ivs)

	e := rpcCall(t, url, "allocateBatch", api.AllocateBatchArgs{}, &reply)
	require.NotNil(e)
	require.Equal(api.CodeInvalidParams, e.Code, "an empty batch")
	e = rpcCall(t, url, "allocateBatch", api.AllocateBatchArgs{Requests: make([]api.AllocateArgs, api.MaxBatch+1)}, &reply)
	require.NotNil(e)
	require.Equal(api.CodeInvalidParams, e.Code, "a batch above MaxBatch")
}

// TestBatchDoesNotQueueReservations: pooled requests of a batch whose
// pools are empty wait for their reservations side by side, not one after
// another, and a warm range's request is answered with them. Served in
// turn, the second range's reservation would be signed only after the
// first one's block, so a batch would cost one block per cold range and
// hold every other range of the exchange behind each.
func TestBatchDoesNotQueueReservations(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, poolGenesis)
	nw.ready(10)
	warm := nw.rangeOf(0, "warm")
	coldA, coldB := nw.rangeOf(0, "cold-a"), nw.rangeOf(0, "cold-b")
	nw.pooled(0, warm, 1, 1)

	reqs := []api.AllocateArgs{
		{Range: coldA, Count: 2, Pooled: true},
		{Range: coldB, Count: 3, Pooled: true},
		{Range: warm, Count: 1, Pooled: true},
	}
	done := sendBatch(t, nw, 0, reqs)
	require.Eventually(func() bool {
		r := pendingEntries(nw, 0)
		return r[coldA] > 0 && r[coldB] > 0
	}, 10*time.Second, 5*time.Millisecond, "both reservations are pending before any block")
	_, err := nw.round(0, 10)
	require.NoError(err)

	var reply api.AllocateBatchReply
	select {
	case reply = <-done:
	case <-time.After(10 * time.Second):
		require.FailNow("the batch was not answered after its reservations' block")
	}
	require.Len(reply.Results, len(reqs))
	for i, r := range reply.Results {
		require.Nil(r.Error, "request %d", i)
		require.True(r.Reply.Pooled)
		require.Equal(reqs[i].Count, r.Reply.Count)
	}
}

// TestBatchOfOneColdRangeReservesOnce: what a hostile client gets from a
// full batch naming cold ranges again and again. Its requests now wait side
// by side, but one range still has at most one reservation in flight: the
// batch costs one reservation per distinct range, not one per request, and
// every request is answered with its own ids.
func TestBatchOfOneColdRangeReservesOnce(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, poolGenesis)
	nw.ready(10)
	coldA, coldB := nw.rangeOf(0, "hostile-a"), nw.rangeOf(0, "hostile-b")
	reqs := make([]api.AllocateArgs, api.MaxBatch)
	for i := range reqs {
		reqs[i] = api.AllocateArgs{Range: coldA, Count: 1, Pooled: true}
		if i%2 == 1 {
			reqs[i].Range = coldB
		}
	}
	done := sendBatch(t, nw, 0, reqs)
	require.Eventually(func() bool {
		r := pendingEntries(nw, 0)
		return r[coldA] > 0 && r[coldB] > 0
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(map[string]int{coldA: 1, coldB: 1}, pendingEntries(nw, 0), "one reservation per range in flight")

	var reply api.AllocateBatchReply
	deadline := time.Now().Add(20 * time.Second)
	for answered := false; !answered; {
		select {
		case reply = <-done:
			answered = true
		case <-time.After(5 * time.Millisecond):
			require.True(time.Now().Before(deadline), "the batch is still waiting")
			if nw.vms[0].Mempool().Len() > 0 {
				_, err := nw.round(0, 10)
				require.NoError(err)
			}
		}
	}
	var ivs [][2]uint64
	for i, r := range reply.Results {
		require.Nil(r.Error, "request %d", i)
		require.Equal(uint64(1), r.Reply.Count)
		ivs = append(ivs, [2]uint64{r.Reply.Base, r.Reply.Base + 1})
	}
	var a, b [][2]uint64
	for i, iv := range ivs {
		if i%2 == 0 {
			a = append(a, iv)
		} else {
			b = append(b, iv)
		}
	}
	disjoint(t, a)
	disjoint(t, b)
}

// sendBatch sends reqs to node i's allocateBatch in the background; the
// reply arrives on the channel.
func sendBatch(t *testing.T, nw *net, i int, reqs []api.AllocateArgs) <-chan api.AllocateBatchReply {
	done := make(chan api.AllocateBatchReply, 1)
	go func() {
		var reply api.AllocateBatchReply
		if e := rpcCall(t, nw.server(i), "allocateBatch", api.AllocateBatchArgs{Requests: reqs}, &reply); e != nil {
			t.Errorf("allocateBatch: %v", e)
		}
		done <- reply
	}()
	return done
}

// pendingEntries counts the allocate entries per range pending in node
// i's mempool.
func pendingEntries(nw *net, i int) map[string]int {
	out := map[string]int{}
	for _, tx := range nw.vms[i].Mempool().All() {
		if a, ok := tx.Unsigned.(*txs.AllocateTx); ok {
			for _, e := range a.Entries {
				out[e.Range]++
			}
		}
	}
	return out
}
