package writer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/logging"
	"go.uber.org/zap"

	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
)

// ErrUnhealthy is what the node's health check reports, with the reason,
// when this node cannot do its job: no membership open yet, or it is a
// validator whose heartbeats are not landing, so its ranges are about to
// move.
var ErrUnhealthy = errcode.New(errcode.NotReady, "unhealthy", "writer: unhealthy")

// HeartbeatChain is what heartbeats read of the chain (package chain).
type HeartbeatChain interface {
	// NewestHeight is the newest P-chain height seen (false: none yet).
	NewestHeight() (uint64, bool)
	State() state.Reader
	ValidatorSet(ctx context.Context, height uint64) (*execute.ValidatorSet, error)
	InForce() *execute.Membership
	// NeedMembership asks for the chain's opening blocks and answers why
	// nothing can be signed yet.
	NeedMembership() error
	CurrentRound() uint64
	UntilNextRound() time.Duration
}

// heartbeats keeps this validator's heartbeats going (run) and says
// whether they land (health). It owns the heartbeats it sent.
type heartbeats struct {
	chain   HeartbeatChain
	nodeID  ids.NodeID
	genesis *config.Genesis
	clock   clock.Clock
	log     logging.Logger
	signer  *signer
	// submit queues a signed heartbeat and pending reports whether one is
	// still in the pool (the writer's).
	submit  func(*txs.Tx) error
	pending func(ids.ID) bool

	mu sync.Mutex // guards sent
	// sent are the heartbeats this node sent, by liveness round (the
	// previous, current and next round's at most).
	sent map[uint64]*txs.Tx
}

// Heartbeat sends this validator's heartbeat for the current liveness round
// unless accepted state already records one, or one is pending. It returns
// the transaction sent, or nil when nothing was needed. A node that is not
// a validator at the current P-chain height sends nothing.
//
// Heartbeats are what keep a validator among the members ranges are pinned
// to (see execute.OpenMembership): a validator that stops sending them loses
// its ranges after K+1 rounds and regains them one round after its next
// heartbeat lands.
func (w *Writer) Heartbeat(ctx context.Context) (*txs.Tx, error) {
	return w.heartbeats.send(ctx, w.heartbeats.chain.CurrentRound())
}

// HeartbeatAhead sends the next liveness round's heartbeat ahead of time
// (config.Genesis.HeartbeatLead before the round starts): it waits in every pool until a
// block of that round can carry it, so the round's first block carries the
// heartbeats of every live validator. A heartbeat sent at the start of the
// round instead lands only in a block built after it, and a round can pass
// without one (a round of a few seconds is no longer than the proposer VM's
// 5 s slot of a dead validator): with K=1, a validator whose heartbeat missed
// its round drops out while alive.
func (w *Writer) HeartbeatAhead(ctx context.Context) (*txs.Tx, error) {
	return w.heartbeats.send(ctx, w.heartbeats.chain.CurrentRound()+1)
}

func (h *heartbeats) send(ctx context.Context, round uint64) (*txs.Tx, error) {
	height, ok := h.chain.NewestHeight()
	if !ok {
		return nil, h.chain.NeedMembership()
	}
	rec, known, err := h.chain.State().Liveness(h.nodeID)
	if err != nil {
		return nil, err
	}
	if known && rec.HasHeartbeat && rec.Heartbeat >= round {
		return nil, nil
	}
	h.mu.Lock()
	pending := h.sent[round]
	h.mu.Unlock()
	if pending != nil && h.pending(pending.ID()) && pending.Unsigned.Head().PChainHeight == height {
		return nil, nil
	}
	v, err := h.chain.ValidatorSet(ctx, height)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", chain.ErrNotReady, err)
	}
	if _, member := v.PublicKey(h.nodeID); !member {
		return nil, nil
	}
	tx, err := h.signer.sign(&txs.HeartbeatTx{Header: h.signer.header(height, ids.Empty, round)})
	if err != nil {
		return nil, err
	}
	if err := h.submit(tx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.sent[round] = tx
	for r := range h.sent {
		if r+1 < round {
			delete(h.sent, r) // only the previous, current and next rounds can still land
		}
	}
	h.mu.Unlock()
	return tx, nil
}

// run keeps this validator's heartbeats going until ctx ends: every
// interval it sends the current round's if it has not landed, and lead
// before each round starts it sends that round's. Errors are logged, not
// fatal: a missed heartbeat costs availability of this node's ranges,
// never safety, and the next tick tries again.
func (h *heartbeats) run(ctx context.Context) {
	every, lead := heartbeatInterval(h.genesis.RoundDurationMs), h.genesis.HeartbeatLead()
	timer := h.clock.NewTimer(max(every, firstHeartbeat))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		_, err := h.send(ctx, h.chain.CurrentRound())
		untilNext := h.chain.UntilNextRound()
		if err == nil && untilNext <= lead {
			_, err = h.send(ctx, h.chain.CurrentRound()+1)
		}
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, chain.ErrNotReady) && h.chain.InForce() == nil:
			// A new chain opens its first membership within a block or
			// two; until then there is nothing to miss.
			h.log.Debug("heartbeat waits for the first membership", zap.Error(err))
		default:
			// A heartbeat that does not go out costs this node its ranges
			// after K+1 rounds: an operator wants to see it.
			h.log.Warn("heartbeat not sent", zap.Error(err))
		}
		next := every
		if untilNext > lead {
			next = min(next, untilNext-lead)
		}
		timer.Reset(next)
	}
}

// health fills details with this validator's heartbeats and fails while
// no membership is open yet, or while this node is in the membership in
// force but no heartbeat of it landed in the previous liveness round (with
// K=1 its ranges move at the next one).
func (h *heartbeats) health(details map[string]any) error {
	inForce := h.chain.InForce()
	if inForce == nil {
		return fmt.Errorf("%w: no membership open yet (the chain opens one at the first request that needs it)", ErrUnhealthy)
	}
	if _, validator := inForce.PublicKey(h.nodeID); !validator {
		return nil
	}
	rec, known, err := h.chain.State().Liveness(h.nodeID)
	if err != nil {
		return err
	}
	landed := rec.FirstSeen
	if rec.HasHeartbeat {
		landed = max(landed, rec.Heartbeat)
	}
	round := h.chain.CurrentRound()
	details["lastHeartbeatRound"], details["round"] = landed, round
	if known && round > landed+1 {
		return fmt.Errorf("%w: no heartbeat of this validator landed since liveness round %d (now %d): its ranges move once it is %d rounds behind (check its clock, its connectivity to the other validators and the log's \"heartbeat not sent\" warnings)",
			ErrUnhealthy, landed, round, h.genesis.LivenessRounds+1)
	}
	return nil
}

// Health is the write path's part of the node's health check: the last
// accepted height, the pending work and this validator's heartbeats, and
// ErrUnhealthy while no membership is open or its heartbeats stopped
// landing.
func (w *Writer) Health() (map[string]any, error) {
	details := map[string]any{"lastAcceptedHeight": w.chain.LastAccepted().Block.Height, "mempool": w.mempool.Len()}
	return details, w.heartbeats.health(details)
}

// firstHeartbeat is the least time between a start and the first heartbeat.
// Before the chain's first membership, a heartbeat asks for the opening
// blocks, and a node started alone for a moment must not build them: the
// local network's bootstrap node runs the chain briefly with sybil
// protection off before it restarts with its peers, and opening blocks it
// accepted alone would fork it from them.
const firstHeartbeat = 3 * time.Second

// heartbeatInterval checks a few times per liveness round, so that a
// heartbeat lost at a round boundary is re-sent well before the round ends.
func heartbeatInterval(roundMs uint64) time.Duration {
	return min(max(time.Duration(roundMs/10)*time.Millisecond, 200*time.Millisecond), 5*time.Second)
}
