package vm_test

import (
	"context"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/version"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/vmtest"
)

// newGossipNet is newNet with gossip wired through a router.
func newGossipNet(t testing.TB, n int) (*net, *vmtest.Network) {
	return newGossipNetWith(t, n, nil)
}

// newGossipNetWith is newGossipNet where tweak, if set, changes node i's
// config before it starts (a faulty signer, say, or its chain config).
func newGossipNetWith(t testing.TB, n int, tweak func(i int, k *txstest.Key, cfg *vm.Config)) (*net, *vmtest.Network) {
	nw := newNet(t, 0)
	keys, err := newKeys(t, n)
	require.NoError(t, err)
	nw.keys = keys
	all := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, k := range keys {
		all[k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, Weight: 10, PublicKey: k.PublicKey()}
	}
	nw.sets[10], nw.sets[20] = all, all
	peers := nw.sets.State(10)
	r := vmtest.NewNetwork()
	t.Cleanup(r.Wait)
	for i, k := range keys {
		v := &vm.VM{}
		cfg := vm.Config{
			NetworkID: 5, ChainID: chainID, SubnetID: subnetID, NodeID: k.NodeID,
			Signer: k.Signer(5, chainID), Validators: nw.sets,
			Clock:  func() time.Time { return time.UnixMilli(nw.now.Load()) },
			Sender: r.Sender(k.NodeID), Peers: peers,
		}
		if tweak != nil {
			tweak(i, k, &cfg)
		}
		require.NoError(t, v.Init(cfg, memdb.New(), genesis))
		t.Cleanup(func() { require.NoError(t, v.Shutdown(context.Background())) })
		nw.vms = append(nw.vms, v)
		r.Join(k.NodeID, v)
	}
	for _, a := range nw.vms {
		for _, k := range keys {
			require.NoError(t, a.Connected(context.Background(), k.NodeID, version.Current))
		}
	}
	return nw, r
}

func TestGossipReachesEveryVM(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw, r := newGossipNet(t, 3)
	nw.ready(10)

	// Push: a tx submitted at its owner reaches the others on its own.
	mine := nw.rangeOf(0, "gp")
	tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 1}})
	require.NoError(err)
	require.Eventually(func() bool {
		return nw.vms[1].Mempool().Has(tx.ID()) && nw.vms[2].Mempool().Has(tx.ID())
	}, 20*time.Second, 10*time.Millisecond, "push gossip")

	// Pull: a node that missed the push fetches the tx when it is back.
	r.Cut(nw.keys[2].NodeID, true)
	tx2, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 2}})
	require.NoError(err)
	require.Eventually(func() bool { return nw.vms[1].Mempool().Has(tx2.ID()) }, 20*time.Second, 10*time.Millisecond)
	require.False(nw.vms[2].Mempool().Has(tx2.ID()))
	r.Cut(nw.keys[2].NodeID, false)
	require.Eventually(func() bool { return nw.vms[2].Mempool().Has(tx2.ID()) }, 30*time.Second, 10*time.Millisecond, "pull gossip")

	// Any node can now build the block; every node accepts the same state.
	b, err := nw.round(2, 10)
	require.NoError(err)
	require.Len(b.Txs, 2)
	for _, v := range nw.vms {
		require.Equal(uint64(3), counter(t, v, mine))
	}
}
