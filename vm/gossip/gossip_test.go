package gossip_test

import (
	"context"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/version"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/gossip"
	"github.com/s-chain/schain/vm/mempool"
	"github.com/s-chain/schain/vm/vmtest"
)

var subnetID = ids.ID{'s'}

// pool admits whatever comes (the node's admission is the writer's) and
// tells the test.
type pool struct {
	*mempool.Mempool
	admitted chan ids.ID
}

func (p *pool) Admit(tx *txs.Tx) error {
	if err := p.Add(tx); err != nil {
		return err
	}
	p.admitted <- tx.ID()
	return nil
}

// node is one node's gossip on the in-memory network.
type node struct {
	id     ids.NodeID
	pool   *pool
	gossip *gossip.Gossip
}

// newNodes starts n nodes' gossip, all validators, all connected, paced by
// clk.
func newNodes(t *testing.T, n int, clk clock.Clock) ([]*node, *vmtest.Network) {
	keys, err := txstest.NewKeys(t.Name(), n)
	require.NoError(t, err)
	sets := vmtest.ValidatorSets{10: map[ids.NodeID]*validators.GetValidatorOutput{}}
	for _, k := range keys {
		sets[10][k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, Weight: 10, PublicKey: k.PublicKey()}
	}
	net := vmtest.NewNetwork()
	t.Cleanup(net.Wait)
	ctx, cancel := context.WithCancel(context.Background())
	var nodes []*node
	for _, k := range keys {
		peers := p2p.NewValidators(logging.NoLog{}, subnetID, sets.State(10), time.Minute)
		network, err := p2p.NewNetwork(logging.NoLog{}, net.Sender(k.NodeID), prometheus.NewRegistry(), "p2p", peers)
		require.NoError(t, err)
		nd := &node{id: k.NodeID, pool: &pool{Mempool: mempool.New(mempool.DefaultConfig()), admitted: make(chan ids.ID, 16)}}
		nd.gossip, err = gossip.New(gossip.Config{
			NodeID: k.NodeID, Limits: txs.DefaultLimits(), Log: logging.NoLog{}, Registerer: prometheus.NewRegistry(),
			Network: network, Peers: peers, Clock: clk,
		}, nd.pool, nd.pool.Mempool)
		require.NoError(t, err)
		net.Join(k.NodeID, network)
		for _, o := range keys { // a node is among its own peers, as in avalanchego
			require.NoError(t, network.Connected(ctx, o.NodeID, version.Current))
		}
		nd.gossip.Run(ctx, logging.NoLog{})
		nodes = append(nodes, nd)
	}
	t.Cleanup(func() {
		cancel()
		for _, nd := range nodes {
			nd.gossip.Wait()
		}
	})
	return nodes, net
}

func signed(t *testing.T, nonce uint64) *txs.Tx {
	keys, err := txstest.NewKeys("gossip-signer", 1)
	require.NoError(t, err)
	tx, err := keys[0].Sign(&txs.AllocateTx{
		Header:  txs.Header{NetworkID: 5, ChainID: ids.ID{'c'}, PChainHeight: 10, Owner: keys[0].NodeID, Nonce: nonce},
		Entries: []txs.AllocateEntry{{Range: "r", Count: 1}},
	})
	require.NoError(t, err)
	return tx
}

func admitted(t *testing.T, nd *node) ids.ID {
	select {
	case id := <-nd.pool.admitted:
		return id
	case <-time.After(10 * time.Second):
		t.Fatalf("node %s admitted nothing", nd.id)
		return ids.Empty
	}
}

// TestOfferPushesAtOnce: an offered transaction is admitted here and
// reaches the other nodes without waiting for the push period (the clock
// never moves).
func TestOfferPushesAtOnce(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	nodes, _ := newNodes(t, 3, clk)
	tx := signed(t, 1)
	require.NoError(t, nodes[0].gossip.Offer(tx))
	require.Equal(t, tx.ID(), admitted(t, nodes[0]))
	require.Equal(t, tx.ID(), admitted(t, nodes[1]))
	require.Equal(t, tx.ID(), admitted(t, nodes[2]))
}

// TestPullFetchesWhatAPushMissed: a node cut off during the push fetches
// the transaction by pulling, once the clock reaches the pull period.
func TestPullFetchesWhatAPushMissed(t *testing.T) {
	require := require.New(t)
	clk := clock.NewManual(time.Unix(1000, 0))
	nodes, net := newNodes(t, 2, clk)
	require.True(clk.AwaitWaiting(4, 10*time.Second), "each node's push and pull loops wait on the clock")
	net.Cut(nodes[1].id, true)
	pushed := make(chan struct{}, 1)
	net.Watch(func(from ids.NodeID, gossip bool, _ []byte) {
		if from == nodes[0].id && gossip {
			select {
			case pushed <- struct{}{}:
			default:
			}
		}
	})
	tx := signed(t, 2)
	require.NoError(nodes[0].gossip.Offer(tx))
	require.Equal(tx.ID(), admitted(t, nodes[0]))
	<-pushed
	net.Wait()
	net.Cut(nodes[1].id, false)
	require.False(nodes[1].pool.Has(tx.ID()), "the push was lost")

	clk.Advance(900 * time.Millisecond) // pushes re-gossip nothing new; no pull yet
	net.Wait()
	require.False(nodes[1].pool.Has(tx.ID()))
	// Each pull asks one sampled validator, the node itself among them (as
	// in avalanchego): some pull period brings it.
	require.Eventually(func() bool {
		clk.Advance(100 * time.Millisecond)
		return nodes[1].pool.Has(tx.ID())
	}, 10*time.Second, time.Millisecond, "pulled")
	require.Equal(tx.ID(), admitted(t, nodes[1]))
}

// TestJunkIsNotAdmitted: bytes that are no transaction are dropped before
// admission.
func TestJunkIsNotAdmitted(t *testing.T) {
	clk := clock.NewManual(time.Unix(1000, 0))
	nodes, net := newNodes(t, 2, clk)
	sender := net.Sender(nodes[0].id)
	for _, junk := range [][]byte{{}, {byte(p2p.TxGossipHandlerID)}, append([]byte{byte(p2p.TxGossipHandlerID)}, make([]byte, 64)...)} {
		require.NoError(t, sender.SendAppGossip(context.Background(), commonConfig(nodes[1].id), junk))
	}
	net.Wait()
	select {
	case id := <-nodes[1].pool.admitted:
		t.Fatalf("admitted %s from junk", id)
	default:
	}
	require.Zero(t, nodes[1].pool.Len())
}

func commonConfig(to ids.NodeID) common.SendConfig { return common.SendConfig{NodeIDs: set.Of(to)} }
