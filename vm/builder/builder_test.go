package builder

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/mempool"
)

// roundMs is the fake chain's liveness round.
const roundMs = 10_000

// fakeChain is a chain whose last accepted block and processing blocks a
// test sets, and whose rounds follow the manual clock.
type fakeChain struct {
	clock *clock.Manual

	mu          sync.Mutex // guards the fields below
	last        *chain.Block
	processing  int
	preferredTs uint64
	preferred   bool
}

var errNoDrafts = errors.New("fake chain: no drafts")

func (f *fakeChain) LastAccepted() *chain.Block {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *fakeChain) Processing(ids.ID) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.processing, false
}

func (f *fakeChain) PreferredProcessing() (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.preferredTs, f.preferred
}

func (f *fakeChain) NewDraft(context.Context, *snowblock.Context) (*chain.Draft, error) {
	return nil, errNoDrafts
}

func (f *fakeChain) now() uint64 { return uint64(f.clock.Now().UnixMilli()) }

func (f *fakeChain) Round(ts uint64) uint64     { return ts / roundMs }
func (f *fakeChain) RoundLength() time.Duration { return roundMs * time.Millisecond }

func (f *fakeChain) UntilNextRound() time.Duration {
	now := max(f.now(), f.LastAccepted().Block.Timestamp)
	return time.Duration((f.Round(now)+1)*roundMs-now) * time.Millisecond
}

func (f *fakeChain) UntilMidRound(ts uint64) (time.Duration, bool) {
	now := max(f.now(), ts)
	mid := f.Round(now)*roundMs + roundMs/2
	if now >= mid {
		return 0, ts < mid
	}
	return time.Duration(mid-now) * time.Millisecond, ts < mid
}

func (f *fakeChain) Until(ms uint64) time.Duration {
	return time.Duration(int64(ms)-int64(f.now())) * time.Millisecond
}

func (f *fakeChain) setLast(ts uint64, opened bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = &chain.Block{Block: &block.Block{Height: 7, Timestamp: ts, HasPChainHeight: opened}}
}

type owners struct{}

func (owners) Refused(ids.ID, string) {}
func (owners) RepinWanted()           {}

// start is 2 s into a round: its middle is 3 s away.
var start = time.UnixMilli(100*roundMs + 2000)

func newBuilder(t *testing.T) (*Builder, *fakeChain, *mempool.Mempool, *clock.Manual) {
	clk := clock.NewManual(start)
	c := &fakeChain{clock: clk}
	c.setLast(uint64(start.UnixMilli()), true)
	pool := mempool.New(mempool.DefaultConfig())
	b, err := New(c, c, pool, owners{}, prometheus.NewRegistry(), clk)
	require.NoError(t, err)
	return b, c, pool, clk
}

// event runs WaitForEvent in the background.
func event(t *testing.T, b *Builder) <-chan error {
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		msg, err := b.WaitForEvent(ctx)
		if err == nil && msg != common.PendingTxs {
			err = errors.New("not PendingTxs")
		}
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return done
}

// asleep requires that WaitForEvent has not returned and sleeps on the
// clock.
func asleep(t *testing.T, clk *clock.Manual, done <-chan error) {
	t.Helper()
	require.True(t, clk.AwaitWaiting(1, 10*time.Second), "WaitForEvent waits on the clock")
	select {
	case err := <-done:
		t.Fatalf("WaitForEvent returned early (%v) at %v", err, clk.Now())
	default:
	}
}

func returned(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForEvent did not return")
	}
}

var nonce uint64

func pending(t *testing.T, pool *mempool.Mempool) {
	keys, err := txstest.NewKeys("builder", 1)
	require.NoError(t, err)
	nonce++
	tx, err := keys[0].Sign(&txs.AllocateTx{
		Header:  txs.Header{NetworkID: 5, ChainID: ids.ID{'c'}, PChainHeight: 10, Owner: keys[0].NodeID, Nonce: nonce},
		Entries: []txs.AllocateEntry{{Range: "r", Count: 1}},
	})
	require.NoError(t, err)
	require.NoError(t, pool.Add(tx))
}

// TestPendingWorkIsOfferedAtOnce: pending transactions are reported without
// waiting; a transaction arriving while the builder sleeps wakes it.
func TestPendingWorkIsOfferedAtOnce(t *testing.T) {
	b, _, pool, _ := newBuilder(t)
	pending(t, pool)
	returned(t, event(t, b))

	b, _, pool, clk := newBuilder(t)
	done := event(t, b)
	asleep(t, clk, done)
	pending(t, pool)
	returned(t, done)
}

// TestSettle: after accepting a block that moved ranges, nothing is offered
// for Settle, whatever is pending; then it is.
func TestSettle(t *testing.T) {
	b, _, pool, clk := newBuilder(t)
	b.Accepted(true, true)
	pending(t, pool)
	done := event(t, b)
	asleep(t, clk, done)
	clk.Advance(Settle - time.Millisecond)
	asleep(t, clk, done)
	_, err := b.BuildBlock(context.Background())
	require.ErrorIs(t, err, ErrNoWork, "a build asked for during Settle builds nothing")
	clk.Advance(time.Millisecond)
	returned(t, done)

	b, _, pool, _ = newBuilder(t)
	b.Accepted(true, false)
	pending(t, pool)
	returned(t, event(t, b)) // a membership whose members stayed does not settle
}

// TestPaced: on a processing preferred block, work is offered the
// pipeline interval after that block's time, not before; on an accepted
// one at once.
func TestPaced(t *testing.T) {
	b, c, pool, clk := newBuilder(t)
	b.Pace(90 * time.Millisecond)
	c.mu.Lock()
	c.preferredTs, c.preferred = uint64(start.UnixMilli())-30, true
	c.mu.Unlock()
	pending(t, pool)
	done := event(t, b)
	asleep(t, clk, done)
	clk.Advance(59 * time.Millisecond)
	asleep(t, clk, done)
	clk.Advance(time.Millisecond)
	returned(t, done)

	c.mu.Lock()
	c.preferred = false
	c.mu.Unlock()
	returned(t, event(t, b))
}

// TestIdleTick: with nothing pending, an opened chain whose newest block
// came before the round's middle is offered a tick once the middle has
// passed, not before; NoTicks turns it off.
func TestIdleTick(t *testing.T) {
	b, _, _, clk := newBuilder(t)
	done := event(t, b)
	asleep(t, clk, done)
	clk.Advance(roundMs/2*time.Millisecond - 2001*time.Millisecond)
	asleep(t, clk, done)
	clk.Advance(2 * time.Millisecond)
	returned(t, done)

	b, _, _, clk = newBuilder(t)
	b.NoTicks()
	done = event(t, b)
	clk.Advance(4 * time.Second)
	asleep(t, clk, done)
	_, err := b.BuildBlock(context.Background())
	require.ErrorIs(t, err, ErrNoWork)
}

// TestOpening: a chain without a membership is offered its opening blocks
// only once a caller wants one.
func TestOpening(t *testing.T) {
	b, c, _, clk := newBuilder(t)
	c.setLast(uint64(start.UnixMilli()), false)
	done := event(t, b)
	asleep(t, clk, done)
	b.WantOpening()
	returned(t, done)
}

// TestWantMembership: a range waiting to move makes the next build open
// the new membership even without work.
func TestWantMembership(t *testing.T) {
	b, _, _, clk := newBuilder(t)
	b.NoTicks()
	done := event(t, b)
	asleep(t, clk, done)
	b.WantMembership()
	returned(t, done)
	_, err := b.BuildBlock(context.Background())
	require.ErrorIs(t, err, errNoDrafts, "the build goes to the chain for a draft")
	b.Accepted(true, false)
	_, err = b.BuildBlock(context.Background())
	require.ErrorIs(t, err, ErrNoWork, "the accepted change satisfied it")
}
