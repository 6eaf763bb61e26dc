// Package builder decides when the engine should build a block and what
// goes into it: WaitForEvent, BuildBlock and BuildBlockWithContext. It picks
// pending transactions in pool order into a chain.Draft, skips what cannot
// go into this block yet, and never builds an empty block for nothing.
package builder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// ErrNoWork is returned by BuildBlock when no pending transaction can go
// into a block: S-Chain never builds empty blocks for nothing.
var ErrNoWork = errors.New("builder: nothing to build")

// maxContextlessOpening bounds the empty blocks built without a P-chain
// context while the chain opens its first membership.
const maxContextlessOpening = 4

// retryBuild is how often pending work that could not go into the last
// block is offered to the engine again (and at every liveness round's
// start).
const retryBuild = time.Second

// Settle is how long a node waits, after accepting a block that changed
// the membership's members, before it builds the next block (and it
// builds nothing on a block that changes the membership before accepting
// it): long enough
// for the other validators to accept it too and for their first writes as
// new owners to reach this node's mempool (requests for arriving ranges
// wait on their new owners and are signed at acceptance; see
// writer.OpeningWait), so that they all go into the next block.
// Without it the first node to accept could build that block with its own
// writes alone, and the others' waited for another height, 5 s per
// proposer slot drawn for a dead validator (seen in `make bench`'s
// failover: 9 s between the first and the last of the new owners' ranges).
// Memberships change rarely; the pause is paid once per change.
const Settle = 300 * time.Millisecond

// OpeningHold is how far into its liveness round a block that moves ranges
// to new owners is built at the earliest (see holdUntil). A move shows
// from the round's start: only then do clients learn the new owners
// (getOwner), and the new owners sign their first writes bound to that
// block (writer.pinFor). The hold lets those writes reach the block's
// builder, after a client's back-off (the Go client's is capped at 0.5 s)
// and a request, so that they ride in it instead of waiting for the next
// height: after a failover that is one proposer slot fewer, 5 s each time
// it is drawn for the dead validator. Memberships change rarely; the hold
// is paid once per change. Rounds shorter than five holds hold a fifth of
// a round.
const OpeningHold = time.Second

// Ticks. On a chain with no other work, blocks come at the liveness
// rounds' starts only (the heartbeats). The proposer VM dates blocks in
// whole seconds and gives each height 5 s slots from its parent's time, so
// with 5 s rounds every height's slots begin on round starts: a round whose
// start slot is drawn for a dead validator passes without a block (its
// next slot begins with the next round), and a round without a block does
// not count for liveness, which keeps the dead validator a member, and its
// ranges stalled, a round longer. So a node builds an empty block, a tick,
// in the middle of a round in which no block came after the middle yet
// and nothing else is pending: the next height's slots then begin mid-round,
// and the next round's heartbeats get two slots inside their round instead
// of one. A tick costs one small block a round on an idle chain, and none
// on a busy one (docs/concepts/liveness.md, "What a failover waits for").

// Owners is what the builder tells the write path (package writer).
type Owners interface {
	// Refused: tx broke a rule and left the pool; its receipt says why.
	Refused(txID ids.ID, reason string)
	// RepinWanted: a build skipped work pinned to a membership or round
	// that can never come back; owners re-sign theirs at the next accept.
	RepinWanted()
}

// Chain is what the builder reads of the block tree and asks of it
// (package chain).
type Chain interface {
	LastAccepted() *chain.Block
	// Processing reports how many blocks are processing (and whether one
	// carries txID).
	Processing(txID ids.ID) (n int, carries bool)
	// PreferredProcessing is the preferred block's time while it is still
	// processing.
	PreferredProcessing() (ts uint64, processing bool)
	NewDraft(ctx context.Context, bctx *snowblock.Context) (*chain.Draft, error)
}

// Rounds is the liveness rounds as this node's clock and its last accepted
// block see them (package chain).
type Rounds interface {
	Round(ts uint64) uint64
	RoundLength() time.Duration
	UntilNextRound() time.Duration
	// UntilMidRound is how long until the middle of the current round
	// (zero once passed), and whether a block dated ts came before it.
	UntilMidRound(ts uint64) (time.Duration, bool)
	// Until is how long until the chain's clock reaches ms.
	Until(ms uint64) time.Duration
}

// Builder is safe for concurrent use.
type Builder struct {
	chain   Chain
	rounds  Rounds
	mempool *mempool.Mempool
	owners  Owners
	refused *prometheus.CounterVec
	clock   clock.Clock

	mu sync.Mutex // guards the fields below
	// openingWanted is set when a client asked for something that needs
	// a membership before the chain has one: only then are the (empty)
	// opening blocks built. bootstrapTried stops WaitForEvent from asking
	// for opening blocks the builder cannot make (no proposer VM context);
	// it is reset on every accept.
	openingWanted  bool
	bootstrapTried bool
	// stalled is set when a build found nothing to include while
	// transactions were pending; WaitForEvent then waits for a change.
	stalled bool
	// membershipWanted is set when a range waits to move to its new owner:
	// the next build opens the new membership even without work.
	membershipWanted bool
	// settled is when a block that changed the membership has settled
	// (Settle after its acceptance here): WaitForEvent offers nothing
	// before.
	settled time.Time
	// heldUntil is when (unix milliseconds, the chain's clock) a block
	// that moves ranges, held by OpeningHold, may be built; 0: none held.
	heldUntil uint64
	changed   chan struct{} // closed and replaced at every change
	// noTicks turns ticks off (NoTicks).
	noTicks bool
	// pipelineInterval paces blocks built on processing ones (Pace).
	pipelineInterval time.Duration
}

// New returns a builder of blocks on c, whose rounds r tells, from pool,
// waiting on clk (nil: the system's clock).
func New(c Chain, r Rounds, pool *mempool.Mempool, owners Owners, reg prometheus.Registerer, clk clock.Clock) (*Builder, error) {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "refused_txs_total", Help: "pending transactions a build found invalid and evicted, by reason"}, []string{"reason"})
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if err := reg.Register(refused); err != nil {
		return nil, err
	}
	if clk == nil {
		clk = clock.Real()
	}
	return &Builder{chain: c, rounds: r, mempool: pool, owners: owners, refused: refused, clock: clk, changed: make(chan struct{})}, nil
}

// Pace sets the pipeline interval: a block is built on a block that is
// still processing no sooner than this after that block's time (0: as soon
// as work is pending). Blocks cost far more per block than per request
// (consensus polls, a certificate, a verification on every node: about 80
// ms of the local network's CPU per block against 1 ms per request), so
// under load, blocks built back to back on each other each carry a few
// requests and the per-block cost takes the machine. Paced, a block carries
// what arrived in the interval. On a chain whose last block is accepted
// nothing waits, so a lone request is built at once
// (docs/internals/performance-log.md, "Pacing pipelined blocks").
func (b *Builder) Pace(interval time.Duration) {
	b.mu.Lock()
	b.pipelineInterval = interval
	b.mu.Unlock()
}

// NoTicks makes the builder build no ticks (tests that count blocks).
func (b *Builder) NoTicks() {
	b.mu.Lock()
	b.noTicks = true
	b.mu.Unlock()
}

// tickDue: a tick may be built on parent, dated ts, now: a membership is
// open, the middle of the current round has passed and no block came
// after it.
func (b *Builder) tickDue(ts uint64, opened bool) bool {
	b.mu.Lock()
	off := b.noTicks
	b.mu.Unlock()
	if off || !opened {
		return false
	}
	wait, before := b.rounds.UntilMidRound(ts)
	return wait == 0 && before
}

// idleTick: WaitForEvent's question, on the last accepted block with
// nothing processing.
func (b *Builder) idleTick() bool {
	if n, _ := b.chain.Processing(ids.Empty); n != 0 {
		return false
	}
	last := b.chain.LastAccepted()
	return b.tickDue(last.Block.Timestamp, last.HasPChainHeight)
}

// WantOpening makes the builder build the chain's opening blocks: a caller
// needs a membership and none is open.
func (b *Builder) WantOpening() {
	b.mu.Lock()
	b.openingWanted = true
	b.mu.Unlock()
	b.Wake()
}

// WantMembership makes the next build open the new liveness round's
// membership even without work: a range waits to move to its new owner.
func (b *Builder) WantMembership() {
	b.mu.Lock()
	b.membershipWanted = true
	b.mu.Unlock()
	b.Wake()
}

// Settled returns once a membership change this node accepted has
// settled (at once without one), or with ctx's error.
func (b *Builder) Settled(ctx context.Context) error {
	for {
		b.mu.Lock()
		settling := b.settled.Sub(b.clock.Now())
		b.mu.Unlock()
		if settling <= 0 {
			return nil
		}
		t := b.clock.NewTimer(settling)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// Accepted resets what an accepted block settles: a block that put a new
// membership in force (membershipChanged) whose members differ from the
// one before (moved: ranges change owners) settles for Settle.
func (b *Builder) Accepted(membershipChanged, moved bool) {
	b.mu.Lock()
	b.bootstrapTried = false
	b.heldUntil = 0
	if membershipChanged {
		b.membershipWanted = false
	}
	if moved {
		b.settled = b.clock.Now().Add(Settle)
	}
	b.mu.Unlock()
	b.Wake()
}

// Wake tells WaitForEvent that something changed.
func (b *Builder) Wake() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *Builder) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// WaitForEvent returns PendingTxs when the mempool holds transactions, or
// while the chain has not opened its first membership (no block with a P-chain
// context yet), so that the engine builds the opening blocks.
//
// It is level-triggered: while transactions are pending it keeps reporting
// them, because a build attempt can fail above the VM (the proposer VM's
// slot checks) after the event was consumed. When the last build found
// nothing to include (work pinned to a P-chain height the chain has not reached,
// or already in a processing block), it waits for a change (a new
// transaction, a decided block) or for retryBuild, so the engine neither
// spins nor stalls. After a block that changed the membership it first
// waits for it to settle (Settle).
func (b *Builder) WaitForEvent(ctx context.Context) (common.Message, error) {
	for {
		if err := b.Settled(ctx); err != nil {
			return 0, err
		}
		if err := b.held(ctx); err != nil {
			return 0, err
		}
		changed := b.wait()
		if b.needsOpening() {
			return common.PendingTxs, nil
		}
		b.mu.Lock()
		stalled := b.stalled
		b.mu.Unlock()
		if b.mempool.Len() > 0 && !stalled {
			if err := b.paced(ctx); err != nil {
				return 0, err
			}
			return common.PendingTxs, nil
		}
		if b.mempool.Len() == 0 && b.idleTick() {
			return common.PendingTxs, nil
		}
		// Work signed for the next liveness round (heartbeats sent ahead)
		// can go into a block from the round's first millisecond on; a
		// tick from the round's middle on.
		wait := b.rounds.UntilNextRound() + time.Millisecond
		if mid, _ := b.rounds.UntilMidRound(b.chain.LastAccepted().Block.Timestamp); mid > 0 {
			wait = min(wait, mid+time.Millisecond)
		}
		pending := b.mempool.Len() > 0
		if pending {
			wait = min(wait, retryBuild)
		}
		timer := b.clock.NewTimer(wait)
		select {
		case <-b.mempool.Pending():
			timer.Stop()
			b.setStalled(false)
			return common.PendingTxs, nil
		case <-changed:
			timer.Stop()
			b.setStalled(false)
		case <-timer.C():
			b.setStalled(false)
			if pending {
				return common.PendingTxs, nil
			}
		case <-ctx.Done():
			timer.Stop()
			return 0, ctx.Err()
		}
	}
}

// holdUntil is when (unix milliseconds) d may be built if it moves ranges:
// OpeningHold (a fifth of a shorter round) after the start of its round,
// when clients learned of the move (getOwner answers for the next block,
// on the last accepted one, in the current round), if that round follows
// its parent's. Otherwise nothing is held: when rounds passed without a
// block (dead proposer slots), the new owners signed their writes long
// before, and a move within the parent's round comes from a new P-chain
// height, which shows whenever a node sees it.
func (b *Builder) holdUntil(d *chain.Draft) uint64 {
	if d.Round() != b.rounds.Round(d.Parent().Block.Timestamp)+1 {
		return 0
	}
	round := b.rounds.RoundLength()
	return d.Round()*uint64(round.Milliseconds()) + uint64(min(OpeningHold, round/5).Milliseconds())
}

// paced returns once a block may be built on the preferred block: at once
// when that block is already accepted, the pipeline interval after its
// time when it is still processing (Pace), or with ctx's error. An
// acceptance during the wait does not end it: under load blocks then come
// at the interval's cadence. Waking early, once the block was accepted
// and as much work was back as it carried, made more, smaller blocks and
// did not pay (docs/internals/performance-log.md, "Where certificates' loss sits").
func (b *Builder) paced(ctx context.Context) error {
	b.mu.Lock()
	interval := b.pipelineInterval
	b.mu.Unlock()
	if interval <= 0 {
		return nil
	}
	ts, processing := b.chain.PreferredProcessing()
	if !processing {
		return nil
	}
	return b.waitUntil(ctx, ts+uint64(interval.Milliseconds()))
}

// held returns once a block held by OpeningHold may be built (at once
// without one), or with ctx's error.
func (b *Builder) held(ctx context.Context) error {
	b.mu.Lock()
	until := b.heldUntil
	b.mu.Unlock()
	if until == 0 {
		return nil
	}
	return b.waitUntil(ctx, until)
}

// waitUntil returns once the chain's clock reaches ms (unix milliseconds),
// or with ctx's error.
func (b *Builder) waitUntil(ctx context.Context, ms uint64) error {
	wait := b.rounds.Until(ms)
	if wait <= 0 {
		return nil
	}
	t := b.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Builder) setStalled(v bool) {
	b.mu.Lock()
	b.stalled = v
	b.mu.Unlock()
}

func (b *Builder) needsOpening() bool {
	if n, _ := b.chain.Processing(ids.Empty); n != 0 {
		return false
	}
	opened := b.chain.LastAccepted().HasPChainHeight
	b.mu.Lock()
	defer b.mu.Unlock()
	return (b.openingWanted && !opened && !b.bootstrapTried) || b.membershipWanted
}

// BuildBlock builds without a P-chain context. Such a block (the first after
// genesis) carries no transactions; it is built only while no membership is
// known and a client asked for one, so that the chain reaches the heights
// where the proposer VM supplies contexts.
func (b *Builder) BuildBlock(ctx context.Context) (snowman.Block, error) {
	return b.build(ctx, nil)
}

// BuildBlockWithContext packs pending transactions pinned to the context's
// P-chain height.
func (b *Builder) BuildBlockWithContext(ctx context.Context, bctx *snowblock.Context) (snowman.Block, error) {
	return b.build(ctx, bctx)
}

func (b *Builder) build(ctx context.Context, bctx *snowblock.Context) (snowman.Block, error) {
	b.mu.Lock()
	wanted, wantMembership := b.openingWanted, b.membershipWanted
	settling := b.settled.Sub(b.clock.Now())
	b.mu.Unlock()
	if b.mempool.Len() == 0 && !wanted && !wantMembership && !b.idleTick() {
		return nil, ErrNoWork
	}
	// The engine may build on an event WaitForEvent gave before the change
	// (seen in a failover: a block 177 ms after the opening one's
	// acceptance). Asked again, WaitForEvent waits for the rest of Settle;
	// not stalled, so that it offers the block as soon as that is over.
	if settling > 0 {
		return nil, fmt.Errorf("%w: the new membership settles for another %s", ErrNoWork, settling.Round(time.Millisecond))
	}
	d, err := b.chain.NewDraft(ctx, bctx)
	if err != nil {
		return nil, err
	}
	// Until a block carries a P-chain height, nodes cannot pin transactions: the
	// chain opens its first membership with (at most a few) empty blocks.
	opening := !d.Parent().HasPChainHeight && wanted
	if bctx == nil {
		// Before the proposer VM forks in (one or two blocks after genesis,
		// depending on the genesis time) blocks come without a context;
		// they open the chain and carry nothing. A bound keeps a chain
		// whose proposer VM never activates from building empty blocks
		// forever.
		if !opening || d.Parent().Block.Height >= maxContextlessOpening {
			d.Discard()
			b.mu.Lock()
			b.bootstrapTried = true
			b.mu.Unlock()
			return nil, fmt.Errorf("%w: a block without a P-chain context carries no transactions", ErrNoWork)
		}
		return d.Seal()
	}
	// The new owners' first writes are signed when the block that moves
	// their ranges is accepted (writer.OpeningWait). Built on that block
	// while it is still processing here, the next block would carry only
	// the writes of whoever accepted it first, and the others' would wait
	// for another height (seen in `make bench`'s failover: a block built
	// 160 ms after the opening one, before its builder had accepted it).
	// So the next block waits for the acceptance, and then for Settle.
	if d.ParentChanging() {
		d.Discard()
		b.setStalled(true)
		return nil, fmt.Errorf("%w: the parent puts a new membership in force and is not accepted here yet", ErrNoWork)
	}
	if d.Validators() == nil && !opening {
		d.Discard()
		return nil, fmt.Errorf("%w: no usable validator at P-chain height %d", chain.ErrNotReady, bctx.PChainHeight)
	}
	if until := b.holdUntil(d); until > d.Timestamp() && d.Moves() {
		d.Discard()
		b.mu.Lock()
		b.heldUntil = until
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: the block that moves ranges to new owners waits %dms more for their first writes", ErrNoWork, until-d.Timestamp())
	}
	stale := false
	if d.Membership() != nil {
		stale = b.pick(d)
	}
	// With only stale work, or a range waiting to move to its new owner, a
	// block that puts a new membership in force is what lets owners
	// (re-)sign; otherwise an empty block is built for nothing.
	tick := d.Len() == 0 && b.tickDue(d.Parent().Block.Timestamp, d.Parent().HasPChainHeight)
	if d.Len() == 0 && !opening && !tick && !((stale || wantMembership) && d.Changed()) {
		changed := d.Changed()
		d.Discard()
		b.mu.Lock()
		b.stalled = true
		if !changed {
			b.membershipWanted = false // nothing to open: the membership in force stays
		}
		b.mu.Unlock()
		if stale {
			b.owners.RepinWanted()
		}
		return nil, ErrNoWork
	}
	b.setStalled(false)
	if stale {
		b.owners.RepinWanted()
	}
	blk, err := d.Seal()
	if err != nil {
		return nil, err
	}
	if b.mempool.Len() > d.Len() {
		b.mempool.Signal() // more than one block's worth is pending
	}
	return blk, nil
}

// pick adds pending transactions to d in pool order, as many as fit: a
// transaction that does not fit is skipped, not the whole build, and one
// that cannot go into this block yet does not keep the ones behind it out.
// It reports work that can never be included under this block's
// membership (its owner re-pins it once a block is accepted).
func (b *Builder) pick(d *chain.Draft) (stale bool) {
	for _, tx := range b.mempool.All() {
		if !d.Fits(tx) {
			continue // a smaller transaction behind it may still fit
		}
		err := d.Add(tx)
		switch {
		case err == nil:
		case errors.Is(err, execute.ErrReplay):
			// In a processing ancestor; kept in case that one is rejected.
		case ahead(tx, d):
			// Pinned to a P-chain height, round or block height this block
			// has not reached.
		case errors.Is(err, execute.ErrWrongPChainHeight), errors.Is(err, execute.ErrWrongFingerprint),
			errors.Is(err, execute.ErrExpired), errors.Is(err, execute.ErrWrongBlockHeight):
			// Pinned to a membership, round or block height no longer in
			// force.
			stale = true
		default:
			b.mempool.Remove(tx.ID()) // evict only the offending transaction
			b.owners.Refused(tx.ID(), "rejected: "+err.Error())
			b.refused.WithLabelValues(reason(err)).Inc()
		}
	}
	return stale
}

// ahead reports whether tx is pinned to a P-chain height, or signed in a
// liveness round, that d has not reached yet.
func ahead(tx *txs.Tx, d *chain.Draft) bool {
	h := tx.Unsigned.Head()
	if h.BlockHeight > d.Height() {
		return true
	}
	if height := d.Membership().Height(); h.PChainHeight != height {
		return h.PChainHeight > height
	}
	if tx.IsHeartbeat() {
		return h.Round > d.Round()
	}
	return h.Round > d.Round()+1
}

// reason labels an eviction for the metric.
func reason(err error) string {
	if _, r := errcode.Of(err); r != "" {
		return r
	}
	return "other"
}
