// Package vmtest is the in-memory harness the node's parts are tested on:
// a network that carries app messages (gossip, requests, responses)
// between in-process nodes, asynchronously as a real one does, with cuts
// and losses a test chooses, and the P-chain's validator sets by height.
// A node is anything that handles app messages: a whole VM, or one part's
// p2p network (gossip, the certifier's requests).
package vmtest

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/utils/set"
)

// Node handles the app messages a Network delivers to it (a vm.VM, a
// p2p.Network).
type Node interface {
	AppRequest(ctx context.Context, from ids.NodeID, requestID uint32, deadline time.Time, msg []byte) error
	AppResponse(ctx context.Context, from ids.NodeID, requestID uint32, msg []byte) error
	AppRequestFailed(ctx context.Context, from ids.NodeID, requestID uint32, appErr *common.AppError) error
	AppGossip(ctx context.Context, from ids.NodeID, msg []byte) error
}

// Network delivers app messages between its nodes, each on its own
// goroutine (as a network does: no order between messages, no sender
// waiting on a receiver). It is safe for concurrent use.
type Network struct {
	mu    sync.Mutex // guards the fields below
	nodes map[ids.NodeID]Node
	cut   map[ids.NodeID]bool
	// drops, when set, loses the messages it returns true for (gossip: an
	// AppGossip, else an AppRequest).
	drops func(gossip bool, msg []byte) bool
	// watch, when set, sees every message sent.
	watch func(from ids.NodeID, gossip bool, msg []byte)

	flights sync.WaitGroup
}

// NewNetwork returns an empty network.
func NewNetwork() *Network {
	return &Network{nodes: map[ids.NodeID]Node{}, cut: map[ids.NodeID]bool{}}
}

// Join adds (or replaces) the node id: messages to id reach node.
func (n *Network) Join(id ids.NodeID, node Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nodes[id] = node
}

// Sender is the common.AppSender of the node id: what it sends n
// delivers (a node may send before it joins).
func (n *Network) Sender(id ids.NodeID) common.AppSender { return &Sender{from: id, n: n} }

// Cut cuts the node id off (no message to or from it) or restores it.
func (n *Network) Cut(id ids.NodeID, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[id] = cut
}

// DropIf makes the network lose the messages f picks (nil: none).
func (n *Network) DropIf(f func(gossip bool, msg []byte) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drops = f
}

// Watch makes the network show f every message sent (nil: none).
func (n *Network) Watch(f func(from ids.NodeID, gossip bool, msg []byte)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.watch = f
}

// Wait returns once every message in flight was handled.
func (n *Network) Wait() { n.flights.Wait() }

// HandlerOf is the p2p handler a message is for (its uvarint prefix).
func HandlerOf(msg []byte) uint64 {
	id, _ := binary.Uvarint(msg)
	return id
}

func (n *Network) dropped(from ids.NodeID, gossip bool, msg []byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watch != nil {
		n.watch(from, gossip, msg)
	}
	return n.drops != nil && n.drops(gossip, msg)
}

// deliver runs f on the node to, unless either end is cut off. A node's
// requests to itself are delivered, as avalanchego's router does (a node
// is among its own connected peers); its gossip never targets itself.
func (n *Network) deliver(from, to ids.NodeID, f func(Node)) {
	n.mu.Lock()
	node, ok := n.nodes[to]
	blocked := n.cut[from] || n.cut[to]
	n.mu.Unlock()
	if !ok || blocked {
		return
	}
	n.flights.Add(1)
	go func() {
		defer n.flights.Done()
		f(node)
	}()
}

func (n *Network) others(from ids.NodeID) []ids.NodeID {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]ids.NodeID, 0, len(n.nodes))
	for id := range n.nodes {
		if id != from {
			out = append(out, id)
		}
	}
	return out
}

// Sender sends one node's app messages over a Network.
type Sender struct {
	from ids.NodeID
	n    *Network
}

var _ common.AppSender = (*Sender)(nil)

// requestTimeout is the deadline a delivered request carries.
const requestTimeout = 5 * time.Second

func (s *Sender) SendAppRequest(_ context.Context, to set.Set[ids.NodeID], requestID uint32, msg []byte) error {
	if s.n.dropped(s.from, false, msg) {
		return nil
	}
	for id := range to {
		s.n.deliver(s.from, id, func(node Node) {
			_ = node.AppRequest(context.Background(), s.from, requestID, time.Now().Add(requestTimeout), msg)
		})
	}
	return nil
}

func (s *Sender) SendAppResponse(_ context.Context, to ids.NodeID, requestID uint32, msg []byte) error {
	s.n.deliver(s.from, to, func(node Node) { _ = node.AppResponse(context.Background(), s.from, requestID, msg) })
	return nil
}

func (s *Sender) SendAppError(_ context.Context, to ids.NodeID, requestID uint32, code int32, msg string) error {
	s.n.deliver(s.from, to, func(node Node) {
		_ = node.AppRequestFailed(context.Background(), s.from, requestID, &common.AppError{Code: code, Message: msg})
	})
	return nil
}

func (s *Sender) SendAppGossip(_ context.Context, cfg common.SendConfig, msg []byte) error {
	if s.n.dropped(s.from, true, msg) {
		return nil
	}
	targets := set.Of(cfg.NodeIDs.List()...)
	if cfg.Validators > 0 || cfg.Peers > 0 {
		targets.Add(s.n.others(s.from)...)
	}
	targets.Remove(s.from)
	for id := range targets {
		s.n.deliver(s.from, id, func(node Node) { _ = node.AppGossip(context.Background(), s.from, msg) })
	}
	return nil
}
