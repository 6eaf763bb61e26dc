package certifier

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"
	"go.uber.org/zap"

	"github.com/s-chain/schain/vm/block"
)

// Pushed signatures. Asking for a signature costs a round trip and, when
// the peer has not accepted the block yet, retries; most of a certificate's
// latency was that. So each validator also pushes its signature to the
// others as soon as it accepts a block, and a node that gathers pushes
// carrying more than 2/3 of the stake certifies without asking anyone.
// Requests remain the fallback: a round starts only when no certificate
// covered the oldest uncovered block within pullAfter of its acceptance
// (a push lost, a peer that restarted).
const (
	// PushHandlerID is the p2p handler pushed signatures travel on.
	PushHandlerID uint64 = 0x5c01
	// pushLen is a push's size: a u64 height and a compressed BLS
	// signature.
	pushLen = 8 + bls.SignatureLen
	// pushAhead bounds how far above its last accepted block a node keeps
	// pushed signatures (peers that accepted blocks it has not yet).
	pushAhead = 64
	// pullAfter is how long pushes have to certify a block before this
	// node asks for the missing signatures.
	pullAfter = 200 * time.Millisecond
)

// Gossiper sends a message to nodes without waiting for an answer
// (*p2p.Client).
type Gossiper interface {
	AppGossip(ctx context.Context, config common.SendConfig, msg []byte) error
}

// pushes are the signatures peers pushed and no attempt has taken yet, by
// height and sender, unchecked. Guarded by Certifier.mu. Bounded: heights
// above the certified one and within pushAhead of the last accepted,
// senders in the newest validator set, one signature per sender and
// height; an attempt takes its height's, a certificate drops those below.
type pushes map[uint64]map[ids.NodeID][]byte

func encodePush(height uint64, sig []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, pushLen), height), sig...)
}

// PushHandler is the handler to register on the node's p2p network under
// PushHandlerID: it keeps what validators push, within bounds.
func (c *Certifier) PushHandler() p2p.Handler { return pushHandler{c} }

type pushHandler struct{ c *Certifier }

var _ p2p.Handler = pushHandler{}

func (h pushHandler) AppGossip(_ context.Context, nodeID ids.NodeID, msg []byte) {
	if reason := h.c.keepPush(nodeID, msg); reason != "" {
		h.c.metrics.refusals.WithLabelValues(reason).Inc()
	}
}

func (pushHandler) AppRequest(context.Context, ids.NodeID, time.Time, []byte) ([]byte, *common.AppError) {
	return nil, &common.AppError{Code: CodeNotStatement, Message: "pushed signatures take no requests"}
}

// keepPush stores one pushed signature and wakes the collector, or names
// why it was not kept.
func (c *Certifier) keepPush(nodeID ids.NodeID, msg []byte) string {
	if len(msg) != pushLen {
		return "malformed"
	}
	height := binary.BigEndian.Uint64(msg)
	c.mu.Lock()
	if !c.members.Contains(nodeID) {
		c.mu.Unlock()
		return "not_a_validator"
	}
	// A validator pushes only blocks it accepted: what it pushes, this
	// node may lag behind, whether it keeps the signature or not.
	c.peers.saw(nodeID, height)
	switch {
	case height <= c.certified || height+pushAhead < c.lastHeight() || height > c.lastHeight()+pushAhead:
		c.mu.Unlock()
		return "outside_window"
	}
	byNode := c.pushed[height]
	if byNode == nil {
		byNode = map[ids.NodeID][]byte{}
		c.pushed[height] = byNode
	}
	if _, ok := byNode[nodeID]; ok {
		c.mu.Unlock()
		return "duplicate"
	}
	byNode[nodeID] = bytes.Clone(msg[8:]) // the message's buffer is not ours to keep
	c.mu.Unlock()
	c.nudge()
	return ""
}

// adoptPushes moves the pushed signatures of open attempts' blocks into
// them, unchecked (certifyBest checks those that would make a quorum), and
// forgets those of certified heights.
func (c *Certifier) adoptPushes() {
	type taken struct {
		a      *attempt
		byNode map[ids.NodeID][]byte
	}
	var take []taken
	c.mu.Lock()
	for h, byNode := range c.pushed {
		switch a := c.open[h]; {
		case a != nil:
			take = append(take, taken{a, byNode})
			delete(c.pushed, h)
		case h <= c.certified:
			delete(c.pushed, h)
		}
	}
	c.mu.Unlock()
	for _, t := range take {
		for nodeID, raw := range t.byNode {
			i, ok := t.a.index[nodeID]
			if !ok || t.a.has(i) {
				continue
			}
			sig, err := decodeSignature(raw)
			if err != nil {
				c.metrics.refusals.WithLabelValues("bad_signature").Inc()
				continue
			}
			t.a.offer(i, sig)
		}
	}
}

// push signs b's statement, when this node is a validator of b's P-chain
// height, and sends the signature to the set's other validators. The set's
// members become the senders whose pushes this node keeps.
func (c *Certifier) push(ctx context.Context, b *block.Block) {
	st, ok := Statement(c.cfg.NetworkID, c.cfg.ChainID, b)
	if !ok {
		return
	}
	aud, err := c.audienceAt(ctx, st.PChainHeight)
	if err != nil {
		c.cfg.Log.Debug("no signature pushed", zap.Uint64("height", b.Height), zap.Error(err))
		return
	}
	// members is replaced, never changed: keepPush reads it under mu.
	c.mu.Lock()
	if !c.members.Equals(aud.members) {
		c.peers.weigh(aud.stake, aud.total)
	}
	c.members = aud.members
	c.mu.Unlock()
	if !aud.members.Contains(c.cfg.NodeID) || c.gossiper == nil {
		return
	}
	msg, err := st.Message()
	if err != nil {
		return
	}
	raw, err := c.sign(msg)
	if err != nil {
		c.cfg.Log.Warn("certificate statement not signed", zap.Uint64("height", b.Height), zap.Error(err))
		return
	}
	if err := c.gossiper.AppGossip(ctx, common.SendConfig{NodeIDs: aud.others}, encodePush(b.Height, raw)); err != nil {
		c.cfg.Log.Debug("signature push not sent", zap.Uint64("height", b.Height), zap.Error(err))
	}
}

// audienceAt returns the validators of pChainHeight, as members and as the
// others to push to; push calls it once per accepted block, and the set
// changes only with the P-chain height, so it is built once per height.
// Only the background goroutine calls it.
func (c *Certifier) audienceAt(ctx context.Context, pChainHeight uint64) (audience, error) {
	if a := c.audience; a.members != nil && a.pChainHeight == pChainHeight {
		return a, nil
	}
	vs, err := c.validatorSet(ctx, pChainHeight)
	if err != nil {
		return audience{}, err
	}
	a := audience{pChainHeight: pChainHeight, members: set.NewSet[ids.NodeID](len(vs.Validators)), stake: map[ids.NodeID]uint64{}, total: vs.TotalWeight}
	for _, v := range vs.Validators {
		a.members.Add(v.NodeIDs...)
		for _, id := range v.NodeIDs {
			a.stake[id] = v.Weight / uint64(len(v.NodeIDs))
		}
	}
	a.others = set.NewSet[ids.NodeID](a.members.Len())
	for id := range a.members {
		if id != c.cfg.NodeID {
			a.others.Add(id)
		}
	}
	c.audience = a
	return a, nil
}

// prunePushes forgets pushes a certificate made useless. Callers hold mu.
func (c *Certifier) prunePushes() {
	for h := range c.pushed {
		if h <= c.certified {
			delete(c.pushed, h)
		}
	}
}
