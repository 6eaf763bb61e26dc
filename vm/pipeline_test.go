package vm_test

import (
	"context"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/writer"
)

// buildOn builds a block on vm i over parent (the engine's preference) and
// returns it; the block is processing on i.
func (nw *net) buildOn(i int, parent snowman.Block) *chain.Block {
	ctx := context.Background()
	require.NoError(nw.t, nw.vms[i].SetPreferenceWithContext(ctx, parent.ID(), &snowblock.Context{PChainHeight: 10}))
	require.NoError(nw.t, nw.vms[i].Builder().Settled(ctx))
	b, err := nw.vms[i].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(nw.t, err)
	return b.(*chain.Block)
}

// allocate signs an allocation on owner i and hands it to the VMs in to.
func (nw *net) allocate(i int, rk string, count uint64, to ...int) *txs.Tx {
	tx, err := nw.vms[i].Writer().Allocate(context.Background(), []txs.AllocateEntry{{Range: rk, Count: count}})
	require.NoError(nw.t, err)
	for _, j := range to {
		if j != i {
			require.NoError(nw.t, nw.vms[j].Writer().SubmitTx(tx))
		}
	}
	return tx
}

// entry is the ids [base, base+count) of a single-entry transaction's
// accepted receipt on w.
func entry(t *testing.T, w *writer.Writer, id ids.ID) [2]uint64 {
	rc, err := w.Receipt(id)
	require.NoError(t, err)
	require.Equal(t, api.StatusAccepted, rc.Status)
	return [2]uint64{rc.Entries[0].Base, rc.Entries[0].Base + rc.Entries[0].Count}
}

// lastAccepted is node i's last accepted block, as the engine sees it.
func (nw *net) lastAccepted(i int) snowman.Block {
	ctx := context.Background()
	id, err := nw.vms[i].LastAccepted(ctx)
	require.NoError(nw.t, err)
	b, err := nw.vms[i].GetBlock(ctx, id)
	require.NoError(nw.t, err)
	return b
}

// TestPipelinedBlocks: a block is built on a parent that is still
// processing (not accepted anywhere), from the parent's state: it carries
// only work the parent does not, and continues the parent's counters. Both
// verify and accept on every node, and no id is issued twice.
func TestPipelinedBlocks(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 3)
	nw.ready(10)
	rk := nw.rangeOf(0, "pipe")
	lastBlk := nw.lastAccepted(0)

	tx1 := nw.allocate(0, rk, 5, 1, 2)
	parent := nw.buildOn(0, lastBlk)
	parents := nw.deliver(parent, 10) // verified everywhere, decided nowhere
	for i, v := range nw.vms {
		n, carries := v.Chain().Processing(tx1.ID())
		require.Equal(1, n, "vm %d", i)
		require.True(carries)
	}

	// More work arrives while the parent is in consensus: another node
	// builds the next block on it without waiting for its acceptance.
	tx2 := nw.allocate(0, rk, 3, 1, 2)
	child := nw.buildOn(1, parents[1])
	require.Equal(parent.ID(), child.Parent(), "built on the processing parent")
	require.Len(child.Txs, 1, "the parent's transaction is not carried twice")
	require.Equal(tx2.ID(), child.Txs[0].ID())
	children := nw.deliver(child, 10)
	for i, v := range nw.vms {
		n, _ := v.Chain().Processing(tx2.ID())
		require.Equal(2, n, "vm %d: parent and child processing", i)
		require.Equal(uint64(0), counter(t, v, rk), "vm %d: nothing accepted yet", i)
	}

	acceptAll(t, parents)
	acceptAll(t, children)
	var ivs [][2]uint64
	for i, v := range nw.vms {
		require.Equal(uint64(8), counter(t, v, rk), "vm %d", i)
		a, b := entry(t, v.Writer(), tx1.ID()), entry(t, v.Writer(), tx2.ID())
		require.Equal([2]uint64{0, 5}, a, "vm %d", i)
		require.Equal([2]uint64{5, 8}, b, "vm %d: the child continued the parent's counter", i)
		ivs = append(ivs, a, b)
	}
	disjoint(t, ivs[:2])
	for i, v := range nw.vms {
		n, _ := v.Chain().Processing(tx2.ID())
		require.Zero(n, "vm %d", i)
	}
}

// TestPipelinedChildDiscardedWithItsParent: when a processing parent loses
// to a competing block, its pipelined child is rejected with it and
// neither leaves a trace in state; their transactions go back to the pool
// and, once included on the winning chain, get ids after the winner's:
// none issued twice.
func TestPipelinedChildDiscardedWithItsParent(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 3)
	nw.ready(10)
	ctx := context.Background()
	rk := nw.rangeOf(0, "pipe")
	lastBlk := nw.lastAccepted(0)

	// vm 2 never sees tx1 and tx2: its competing block carries tx3 only.
	tx1 := nw.allocate(0, rk, 5, 1)
	parent := nw.buildOn(0, lastBlk)
	parents := nw.deliver(parent, 10)
	tx2 := nw.allocate(0, rk, 3, 1)
	child := nw.buildOn(1, parents[1])
	require.Equal(parent.ID(), child.Parent())
	children := nw.deliver(child, 10)
	tx3 := nw.allocate(0, rk, 7, 2)
	nw.vms[2].Mempool().Remove(tx1.ID(), tx2.ID())
	rival := nw.buildOn(2, lastBlk)
	require.Equal(lastBlk.ID(), rival.Parent(), "the competing block is the parent's sibling")
	require.Len(rival.Txs, 1)
	require.Equal(tx3.ID(), rival.Txs[0].ID())
	rivals := nw.deliver(rival, 10)

	// The engine rejects the losing parent's descendants with it.
	acceptAll(t, rivals)
	for i := range nw.vms {
		require.NoError(children[i].Reject(ctx))
		require.NoError(parents[i].Reject(ctx))
	}
	for i, v := range nw.vms {
		require.Equal(uint64(7), counter(t, v, rk), "vm %d: only the winner's allocation is in state", i)
		require.Equal([2]uint64{0, 7}, entry(t, v.Writer(), tx3.ID()), "vm %d", i)
		n, _ := v.Chain().Processing(tx1.ID())
		require.Zero(n, "vm %d: the rejected blocks are gone", i)
		rc, err := v.Writer().Receipt(tx1.ID())
		if err == nil {
			require.NotEqual(api.StatusAccepted, rc.Status, "vm %d: tx1 was never applied", i)
		}
	}
	require.True(nw.vms[0].Mempool().Has(tx1.ID()), "the rejected transactions are offered again")
	require.True(nw.vms[0].Mempool().Has(tx2.ID()))

	// Included on the winning chain, they continue its counter.
	next := nw.buildOn(0, rivals[0])
	require.Len(next.Txs, 2)
	acceptAll(t, nw.deliver(next, 10))
	var ivs [][2]uint64
	for _, id := range []ids.ID{tx3.ID(), tx1.ID(), tx2.ID()} {
		ivs = append(ivs, entry(t, nw.vms[1].Writer(), id))
	}
	disjoint(t, ivs)
	for i, v := range nw.vms {
		require.Equal(uint64(15), counter(t, v, rk), "vm %d", i)
	}
}

// TestPipelinedBuildsArePaced: with work pending on top of a block that is
// still processing, WaitForEvent offers the next build only the pipeline
// interval after that block's time, so that under load each block carries
// what arrived meanwhile; with the last block accepted it offers it at
// once, so a lone request is not delayed.
func TestPipelinedBuildsArePaced(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nw := newNet(t, 3)
	nw.ready(10)
	rk := nw.rangeOf(0, "paced")
	const interval = 300 * time.Millisecond
	nw.vms[0].Builder().Pace(interval)

	nw.allocate(0, rk, 1)
	began := time.Now()
	msg, err := nw.vms[0].WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)
	require.Less(time.Since(began), interval, "nothing processing: offered at once")

	parent := nw.buildOn(0, nw.lastAccepted(0))
	nw.deliver(parent, 10) // processing everywhere
	require.NoError(nw.vms[0].SetPreferenceWithContext(ctx, parent.ID(), &snowblock.Context{PChainHeight: 10}), "the engine prefers what it verified")
	nw.allocate(0, rk, 1)
	began = time.Now()
	msg, err = nw.vms[0].WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)
	require.GreaterOrEqual(time.Since(began), interval/2, "on a processing block: paced")
	child := nw.buildOn(0, parent)
	require.Len(child.Txs, 1, "the paced block carries the pending work")
}
