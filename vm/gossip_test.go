package vm_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/snow/validators/validatorstest"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/version"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm"
)

// router delivers app messages between in-process VMs, asynchronously like
// a network, and can cut a node off.
type router struct {
	mu      sync.Mutex
	vms     map[ids.NodeID]*vm.VM
	cut     map[ids.NodeID]bool
	flights sync.WaitGroup
	// drops, when set, loses the app messages it returns true for (gossip:
	// an AppGossip, else an AppRequest), as a network may.
	drops func(gossip bool, msg []byte) bool
	// watch, when set, sees every app message sent (from whom, gossip or
	// request).
	watch func(from ids.NodeID, gossip bool, msg []byte)
}

// watchWith makes the router show f every app message sent.
func (r *router) watchWith(f func(from ids.NodeID, gossip bool, msg []byte)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watch = f
}

// dropIf makes the router lose the messages f picks.
func (r *router) dropIf(f func(gossip bool, msg []byte) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drops = f
}

func (r *router) dropped(from ids.NodeID, gossip bool, msg []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watch != nil {
		r.watch(from, gossip, msg)
	}
	return r.drops != nil && r.drops(gossip, msg)
}

// handlerOf is the p2p handler a message is for (its uvarint prefix).
func handlerOf(msg []byte) uint64 {
	id, _ := binary.Uvarint(msg)
	return id
}

func (r *router) deliver(from, to ids.NodeID, f func(v *vm.VM)) {
	r.mu.Lock()
	v, ok := r.vms[to]
	blocked := r.cut[from] || r.cut[to]
	r.mu.Unlock()
	if !ok || blocked || from == to {
		return
	}
	r.flights.Add(1)
	go func() {
		defer r.flights.Done()
		f(v)
	}()
}

func (r *router) others(from ids.NodeID) []ids.NodeID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ids.NodeID
	for id := range r.vms {
		if id != from {
			out = append(out, id)
		}
	}
	return out
}

func (r *router) setCut(id ids.NodeID, cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut[id] = cut
}

type sender struct {
	from ids.NodeID
	r    *router
}

var _ common.AppSender = (*sender)(nil)

func (s *sender) SendAppRequest(ctx context.Context, to set.Set[ids.NodeID], requestID uint32, msg []byte) error {
	if s.r.dropped(s.from, false, msg) {
		return nil
	}
	for id := range to {
		s.r.deliver(s.from, id, func(v *vm.VM) {
			_ = v.AppRequest(context.Background(), s.from, requestID, time.Now().Add(5*time.Second), msg)
		})
	}
	return nil
}

func (s *sender) SendAppResponse(_ context.Context, to ids.NodeID, requestID uint32, msg []byte) error {
	s.r.deliver(s.from, to, func(v *vm.VM) { _ = v.AppResponse(context.Background(), s.from, requestID, msg) })
	return nil
}

func (s *sender) SendAppError(_ context.Context, to ids.NodeID, requestID uint32, code int32, msg string) error {
	s.r.deliver(s.from, to, func(v *vm.VM) {
		_ = v.AppRequestFailed(context.Background(), s.from, requestID, &common.AppError{Code: code, Message: msg})
	})
	return nil
}

func (s *sender) SendAppGossip(_ context.Context, cfg common.SendConfig, msg []byte) error {
	if s.r.dropped(s.from, true, msg) {
		return nil
	}
	targets := set.Of(cfg.NodeIDs.List()...)
	if cfg.Validators > 0 || cfg.Peers > 0 {
		targets.Add(s.r.others(s.from)...)
	}
	for id := range targets {
		s.r.deliver(s.from, id, func(v *vm.VM) { _ = v.AppGossip(context.Background(), s.from, msg) })
	}
	return nil
}

// newGossipNet is newNet with gossip wired through a router.
func newGossipNet(t testing.TB, n int) (*net, *router) {
	return newGossipNetWith(t, n, nil)
}

// newGossipNetWith is newGossipNet where tweak, if set, changes node i's
// config before it starts (a faulty signer, say, or its chain config).
func newGossipNetWith(t testing.TB, n int, tweak func(i int, k *txstest.Key, cfg *vm.Config)) (*net, *router) {
	nw := newNet(t, 0)
	keys, err := newKeys(t, n)
	require.NoError(t, err)
	nw.keys = keys
	all := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, k := range keys {
		all[k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, Weight: 10, PublicKey: k.PublicKey()}
	}
	nw.sets[10], nw.sets[20] = all, all
	peers := &validatorstest.State{
		GetCurrentHeightF: func(context.Context) (uint64, error) { return 10, nil },
		GetValidatorSetF:  nw.sets.GetValidatorSet,
	}
	r := &router{vms: map[ids.NodeID]*vm.VM{}, cut: map[ids.NodeID]bool{}}
	t.Cleanup(r.flights.Wait)
	for i, k := range keys {
		v := &vm.VM{}
		cfg := vm.Config{
			NetworkID: 5, ChainID: chainID, SubnetID: subnetID, NodeID: k.NodeID,
			Signer: k.Signer(5, chainID), Validators: nw.sets,
			Clock:  func() time.Time { return time.UnixMilli(nw.now.Load()) },
			Sender: &sender{from: k.NodeID, r: r}, Peers: peers,
		}
		if tweak != nil {
			tweak(i, k, &cfg)
		}
		require.NoError(t, v.Init(cfg, memdb.New(), genesis))
		t.Cleanup(func() { require.NoError(t, v.Shutdown(context.Background())) })
		nw.vms = append(nw.vms, v)
		r.vms[k.NodeID] = v
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
	r.setCut(nw.keys[2].NodeID, true)
	tx2, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 2}})
	require.NoError(err)
	require.Eventually(func() bool { return nw.vms[1].Mempool().Has(tx2.ID()) }, 20*time.Second, 10*time.Millisecond)
	require.False(nw.vms[2].Mempool().Has(tx2.ID()))
	r.setCut(nw.keys[2].NodeID, false)
	require.Eventually(func() bool { return nw.vms[2].Mempool().Has(tx2.ID()) }, 30*time.Second, 10*time.Millisecond, "pull gossip")

	// Any node can now build the block; every node accepts the same state.
	b, err := nw.round(2, 10)
	require.NoError(err)
	require.Len(b.Txs, 2)
	for _, v := range nw.vms {
		require.Equal(uint64(3), counter(t, v, mine))
	}
}
