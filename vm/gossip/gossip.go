// Package gossip spreads pending transactions to the subnet's validators
// with avalanchego's push and pull gossip (the X-chain's model): push
// often, so a transaction reaches the slot's proposer fast, and pull as a
// safety net for what a push missed. What peers push or answer to pulls
// goes through the node's own admission.
package gossip

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	avagossip "github.com/ava-labs/avalanchego/network/p2p/gossip"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/mempool"
)

// Gossip periods. A transaction this node offers is pushed at once (see
// Offer); the push period only paces re-gossip.
const (
	pushPeriod = 100 * time.Millisecond
	pullPeriod = time.Second
)

// Admitter takes a transaction into the pool after the node's admission
// checks (package writer).
type Admitter interface {
	Admit(tx *txs.Tx) error
}

// Config is what gossip needs from its node: the node's p2p network (its
// handlers are registered there) and the subnet's validators on it.
type Config struct {
	NodeID     ids.NodeID
	Limits     txs.Limits
	Log        logging.Logger
	Registerer prometheus.Registerer
	Network    *p2p.Network
	Peers      *p2p.Validators
	// Clock paces the push and pull loops (nil: the system's).
	Clock clock.Clock
}

var (
	_ avagossip.Set[*txs.Tx]        = set{}
	_ avagossip.Marshaller[*txs.Tx] = marshaller{}
)

// set shows the pool to the gossip protocol.
type set struct {
	admit Admitter
	pool  *mempool.Mempool
}

func (s set) Add(tx *txs.Tx) error { return s.admit.Admit(tx) }
func (s set) Has(id ids.ID) bool   { return s.pool.Has(id) }
func (s set) Len() int             { return s.pool.Len() }

func (s set) Iterate(f func(*txs.Tx) bool) {
	for _, tx := range s.pool.All() {
		if !f(tx) {
			return
		}
	}
}

type marshaller struct{ limits txs.Limits }

func (marshaller) MarshalGossip(tx *txs.Tx) ([]byte, error) { return tx.Bytes(), nil }

func (m marshaller) UnmarshalGossip(b []byte) (*txs.Tx, error) { return txs.Parse(b, m.limits) }

// Gossip is the push and pull gossip of one node's pool.
type Gossip struct {
	set   *avagossip.BloomSet[*txs.Tx]
	push  *avagossip.PushGossiper[*txs.Tx]
	pull  avagossip.Gossiper
	clock clock.Clock
	loops sync.WaitGroup
	// pushNow wakes the push loop: a transaction was offered.
	pushNow chan struct{}
}

// New registers gossip on the node's p2p network; Run starts it.
func New(cfg Config, admit Admitter, pool *mempool.Mempool) (*Gossip, error) {
	network, peers := cfg.Network, cfg.Peers
	bloom, err := avagossip.NewBloomSet[*txs.Tx](set{admit: admit, pool: pool}, avagossip.BloomSetConfig{})
	if err != nil {
		return nil, err
	}
	handler, pull, push, err := avagossip.NewSystem(cfg.NodeID, network, peers, bloom, marshaller{cfg.Limits}, avagossip.SystemConfig{
		Log:           cfg.Log,
		Registry:      cfg.Registerer,
		Namespace:     "tx_gossip",
		RequestPeriod: pullPeriod,
	})
	if err != nil {
		return nil, fmt.Errorf("gossip: %w", err)
	}
	if err := network.AddHandler(p2p.TxGossipHandlerID, handler); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	return &Gossip{set: bloom, push: push, pull: pull, clock: cfg.Clock, pushNow: make(chan struct{}, 1)}, nil
}

// Offer admits tx here and pushes it to the other validators at once:
// only the proposer of the next height's slot can build the block that
// carries it, and on the push period's tick a request would wait half a
// period on average before that proposer even knows of it.
func (g *Gossip) Offer(tx *txs.Tx) error {
	if err := g.set.Add(tx); err != nil {
		return err
	}
	g.push.Add(tx)
	select {
	case g.pushNow <- struct{}{}:
	default: // a push is already due; it sends this one too
	}
	return nil
}

// Run gossips until ctx ends; Wait waits for it to stop.
func (g *Gossip) Run(ctx context.Context, log logging.Logger) {
	g.loops.Add(2)
	go func() { defer g.loops.Done(); g.every(ctx, log, g.push, pushPeriod, g.pushNow) }()
	go func() { defer g.loops.Done(); g.every(ctx, log, g.pull, pullPeriod, nil) }()
}

// every gossips each period on the clock, and at once when now fires
// (push: what was offered goes out as soon as it is), until ctx ends.
func (g *Gossip) every(ctx context.Context, log logging.Logger, gossiper avagossip.Gossiper, period time.Duration, now <-chan struct{}) {
	tick := g.clock.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		case <-now:
		}
		if err := gossiper.Gossip(ctx); err != nil {
			log.Warn("failed to gossip", zap.Error(err))
		}
	}
}

// Wait returns once Run's loops stopped.
func (g *Gossip) Wait() { g.loops.Wait() }
