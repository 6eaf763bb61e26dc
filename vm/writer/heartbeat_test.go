package writer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
)

const hbRoundMs = 10_000 // every 1 s, the next round's 1 s ahead

// hbChain is a chain whose rounds follow a manual clock and whose
// liveness records a test writes.
type hbChain struct {
	clock *clock.Manual
	vs    *execute.ValidatorSet

	mu      sync.Mutex // guards the fields below
	opened  bool
	records map[ids.NodeID]state.Liveness
}

// hbState answers liveness records; nothing else is asked.
type hbState struct {
	state.Reader
	c *hbChain
}

func (s hbState) Liveness(id ids.NodeID) (state.Liveness, bool, error) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	rec, ok := s.c.records[id]
	return rec, ok, nil
}

func (c *hbChain) NewestHeight() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return 10, c.opened
}
func (c *hbChain) State() state.Reader { return hbState{c: c} }
func (c *hbChain) ValidatorSet(context.Context, uint64) (*execute.ValidatorSet, error) {
	return c.vs, nil
}

func (c *hbChain) InForce() *execute.Membership {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.opened {
		return nil
	}
	return c.vs.All()
}
func (c *hbChain) NeedMembership() error { return chain.ErrNoMembership }
func (c *hbChain) CurrentRound() uint64  { return uint64(c.clock.Now().UnixMilli()) / hbRoundMs }
func (c *hbChain) UntilNextRound() time.Duration {
	now := uint64(c.clock.Now().UnixMilli())
	return time.Duration((now/hbRoundMs+1)*hbRoundMs-now) * time.Millisecond
}

func (c *hbChain) land(id ids.NodeID, round uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records[id] = state.Liveness{FirstSeen: 1, Heartbeat: round, HasHeartbeat: true}
}

// hbNode is one validator's heartbeats over hbChain; sent heartbeats
// arrive on the channel and stay pending until landed or dropped.
type hbNode struct {
	*heartbeats
	c       *hbChain
	out     chan *txs.Tx
	mu      sync.Mutex
	pending map[ids.ID]bool
}

func newHeartbeats(t *testing.T, validator bool) *hbNode {
	keys, err := txstest.NewKeys(t.Name(), 2)
	require.NoError(t, err)
	me, other := keys[0], keys[1]
	vals := []execute.Validator{{NodeID: other.NodeID, Weight: 10, PublicKey: other.PublicKey()}}
	if validator {
		vals = append(vals, execute.Validator{NodeID: me.NodeID, Weight: 10, PublicKey: me.PublicKey()})
	}
	vs, err := execute.NewValidatorSet(10, vals)
	require.NoError(t, err)
	g := config.DefaultGenesis()
	g.RoundDurationMs = hbRoundMs
	clk := clock.NewManual(time.UnixMilli(100*hbRoundMs + 1000))
	c := &hbChain{clock: clk, vs: vs, opened: true, records: map[ids.NodeID]state.Liveness{}}
	s, err := newSigner(Config{NetworkID: 5, ChainID: ids.ID{'c'}, NodeID: me.NodeID, Signer: me.Signer(5, ids.ID{'c'}), Genesis: &g}, execute.NewSignatureCache(16))
	require.NoError(t, err)
	n := &hbNode{c: c, out: make(chan *txs.Tx, 16), pending: map[ids.ID]bool{}}
	n.heartbeats = &heartbeats{
		chain: c, nodeID: me.NodeID, genesis: &g, clock: clk, log: logging.NoLog{}, signer: s,
		submit: func(tx *txs.Tx) error {
			n.mu.Lock()
			n.pending[tx.ID()] = true
			n.mu.Unlock()
			n.out <- tx
			return nil
		},
		pending: func(id ids.ID) bool { n.mu.Lock(); defer n.mu.Unlock(); return n.pending[id] },
		sent:    map[uint64]*txs.Tx{},
	}
	return n
}

func (n *hbNode) drop(tx *txs.Tx) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pending, tx.ID())
}

func (n *hbNode) next(t *testing.T) *txs.Tx {
	t.Helper()
	select {
	case tx := <-n.out:
		return tx
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat sent")
		return nil
	}
}

func (n *hbNode) quiet(t *testing.T) {
	t.Helper()
	select {
	case tx := <-n.out:
		t.Fatalf("heartbeat of round %d sent", tx.Unsigned.Head().Round)
	default:
	}
}

// TestOneHeartbeatPerRound: a round's heartbeat is sent once while it is
// pending, again if it left the pool without landing, and not at all once
// it landed or by a node that is no validator.
func TestOneHeartbeatPerRound(t *testing.T) {
	require := require.New(t)
	n := newHeartbeats(t, true)
	ctx := context.Background()
	tx, err := n.send(ctx, 100)
	require.NoError(err)
	require.NotNil(tx)
	require.Equal(uint64(100), tx.Unsigned.Head().Round)
	require.Equal(tx, n.next(t))
	again, err := n.send(ctx, 100)
	require.NoError(err)
	require.Nil(again, "pending")
	n.drop(tx)
	again, err = n.send(ctx, 100)
	require.NoError(err)
	require.NotNil(again, "lost from the pool: sent again")
	require.NotEqual(tx.ID(), again.ID(), "with a fresh nonce")
	n.c.land(n.nodeID, 100)
	n.drop(again)
	none, err := n.send(ctx, 100)
	require.NoError(err)
	require.Nil(none, "landed")

	outsider := newHeartbeats(t, false)
	none, err = outsider.send(ctx, 100)
	require.NoError(err)
	require.Nil(none)

	n.c.mu.Lock()
	n.c.opened = false
	n.c.mu.Unlock()
	_, err = n.send(ctx, 101)
	require.ErrorIs(err, chain.ErrNoMembership)
}

// TestRunSendsAndSendsAhead: the loop sends the current round's heartbeat
// at its first tick (3 s after start at the earliest), the next round's a
// lead before that round starts, and nothing in between once they are
// pending.
func TestRunSendsAndSendsAhead(t *testing.T) {
	require := require.New(t)
	n := newHeartbeats(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.run(ctx) }()
	defer func() { cancel(); <-done }()
	clk := n.c.clock

	require.True(clk.AwaitWaiting(1, 10*time.Second))
	clk.Advance(firstHeartbeat - time.Millisecond)
	n.quiet(t)
	clk.Advance(time.Millisecond)
	require.Equal(uint64(100), n.next(t).Unsigned.Head().Round, "the current round's, at the first tick")

	// Now 4 s into round 100: the next round starts in 6 s, its heartbeat
	// goes out 1 s before.
	for clk.Now().Before(time.UnixMilli(101*hbRoundMs - 1000)) {
		require.True(clk.AwaitWaiting(1, 10*time.Second))
		n.quiet(t)
		clk.Advance(time.Second)
	}
	require.Equal(uint64(101), n.next(t).Unsigned.Head().Round, "the next round's, a lead ahead")
}

// TestHealth: healthy while this validator's heartbeats land; unhealthy
// without a membership, or once it is more than a round behind.
func TestHealth(t *testing.T) {
	require := require.New(t)
	n := newHeartbeats(t, true)
	details := map[string]any{}
	n.c.land(n.nodeID, 99)
	require.NoError(n.health(details))
	require.Equal(uint64(99), details["lastHeartbeatRound"])
	require.Equal(uint64(100), details["round"])

	n.c.clock.Advance(hbRoundMs * time.Millisecond) // round 101: two behind
	require.ErrorIs(n.health(details), ErrUnhealthy)
	n.c.land(n.nodeID, 101)
	require.NoError(n.health(details))

	require.NoError(newHeartbeats(t, false).health(map[string]any{}), "not a validator: nothing to land")

	n.c.mu.Lock()
	n.c.opened = false
	n.c.mu.Unlock()
	require.ErrorIs(n.health(details), ErrUnhealthy)
}
