package vm

import (
	"context"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/network/p2p/gossip"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/s-chain/schain/txs"
)

// Gossip periods: push often (a tx reaches the slot's proposer fast), pull
// as a safety net for what a push missed.
const (
	pushGossipPeriod = 100 * time.Millisecond
	pullGossipPeriod = time.Second
)

var (
	_ gossip.Set[*txs.Tx]        = gossipSet{}
	_ gossip.Marshaller[*txs.Tx] = gossipMarshaller{}
)

// gossipSet shows the mempool to the gossip protocol: what peers push or
// answer to pulls goes through the same admission as API submissions.
type gossipSet struct{ vm *VM }

func (g gossipSet) Add(tx *txs.Tx) error { return g.vm.admit(tx) }
func (g gossipSet) Has(id ids.ID) bool   { return g.vm.mempool.Has(id) }
func (g gossipSet) Len() int             { return g.vm.mempool.Len() }

func (g gossipSet) Iterate(f func(*txs.Tx) bool) {
	for _, tx := range g.vm.mempool.Peek(g.vm.genesis.Mempool.MaxTxs, g.vm.genesis.Mempool.MaxBytes) {
		if !f(tx) {
			return
		}
	}
}

type gossipMarshaller struct{ limits txs.Limits }

func (gossipMarshaller) MarshalGossip(tx *txs.Tx) ([]byte, error) { return tx.Bytes(), nil }

func (m gossipMarshaller) UnmarshalGossip(b []byte) (*txs.Tx, error) { return txs.Parse(b, m.limits) }

// gossiper is the push and pull tx gossip to the subnet's validators.
type gossiper struct {
	network *p2p.Network
	set     *gossip.BloomSet[*txs.Tx]
	push    *gossip.PushGossiper[*txs.Tx]
	pull    gossip.Gossiper
}

// startGossip wires tx gossip into the node's p2p layer. Without an
// AppSender (tests of a lone VM) the VM runs without gossip.
func (vm *VM) startGossip(ctx context.Context, log logging.Logger, sender common.AppSender, state validators.State, reg prometheus.Registerer) error {
	peers := p2p.NewValidators(log, vm.cfg.SubnetID, state, time.Minute)
	network, err := p2p.NewNetwork(log, sender, reg, "p2p", peers)
	if err != nil {
		return fmt.Errorf("p2p network: %w", err)
	}
	set, err := gossip.NewBloomSet[*txs.Tx](gossipSet{vm: vm}, gossip.BloomSetConfig{})
	if err != nil {
		return err
	}
	handler, pull, push, err := gossip.NewSystem(vm.cfg.NodeID, network, peers, set, gossipMarshaller{vm.genesis.TxLimits}, gossip.SystemConfig{
		Log:           log,
		Registry:      reg,
		Namespace:     "tx_gossip",
		RequestPeriod: pullGossipPeriod,
	})
	if err != nil {
		return fmt.Errorf("gossip: %w", err)
	}
	if err := network.AddHandler(p2p.TxGossipHandlerID, handler); err != nil {
		return err
	}
	vm.gossip = &gossiper{network: network, set: set, push: push, pull: pull}
	vm.AppHandler = network
	vm.background.Add(2)
	go func() { defer vm.background.Done(); gossip.Every(ctx, log, push, pushGossipPeriod) }()
	go func() { defer vm.background.Done(); gossip.Every(ctx, log, pull, pullGossipPeriod) }()
	return nil
}
