// Package writer is the owner's write path: it signs this node's
// allocations, manifests and heartbeats against the membership in force,
// admits transactions (its own and gossiped ones) into the pool, groups
// concurrent requests into one signed transaction, hands out ids from
// pools committed in advance, re-signs pending work a new membership made
// stale, and answers receipts and waits.
package writer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/cache/lru"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
)

// ErrShuttingDown is returned to requests that arrive while the VM stops.
var ErrShuttingDown = errcode.New(errcode.NotReady, "shutting_down", "writer: shutting down")

// ErrMembershipOpening is the NotReady of a range that moves to this node
// when the next block opens the new round's membership: the range
// is this node's in the membership that block will have, not yet in the one
// in force.
var ErrMembershipOpening = errcode.New(errcode.NotReady, "membership_opening", "writer: ownership moves to this node when the next block opens the new membership")

// Config is what the write path needs from its node.
type Config struct {
	NetworkID uint32
	ChainID   ids.ID
	NodeID    ids.NodeID
	Signer    warp.Signer
	Genesis   *config.Genesis
	// Signatures is the chain's cache of verified signatures, shared with
	// Verify (nil: a private one).
	Signatures *execute.SignatureCache
	// Clock is the node's time and its waits (nil: the system's).
	Clock clock.Clock
	Log   logging.Logger
	// Registerer receives the write path's metrics (nil: a private one).
	Registerer prometheus.Registerer
	// Heartbeats makes the writer send this validator's heartbeat a few
	// times per liveness round (a node always does; in-process users call
	// Heartbeat themselves).
	Heartbeats bool
}

// OpeningWait bounds how long a request for a range that moves to this node
// waits for the block that opens the new membership before it answers
// NotReady. A move shows from a round's start, and its opening block comes
// at that start or, when the proposer slot there is a dead validator's, one
// 5 s slot later (two, ...). A bound of exactly one slot ran out just
// before that block: a request that began waiting at the round start was
// answered NotReady 30 ms before the opening block was accepted, came back
// after the next block was built and waited for the block after it (19.1 s
// instead of 14.4 s in one bench run of 2026-12-01). So the bound is a slot
// and 2 s more: it ends between round starts, where no opening block
// comes, and a client that retries is waiting again by the next one. It
// stays below the Go client's and the bench's 10 s request timeouts.
const OpeningWait = 7 * time.Second

// Builds is what the write path asks of the block builder.
type Builds interface {
	// WantMembership: a range waits to move to this node; the next block
	// should open the new membership even without work.
	WantMembership()
}

// Chain is what the write path reads of the chain (package chain): the
// heartbeats' view, the memberships this node signs against and checks
// pins with, and accepted and processing blocks.
type Chain interface {
	HeartbeatChain
	LastAccepted() *chain.Block
	// Processing reports how many blocks are processing, and whether one
	// carries txID.
	Processing(txID ids.ID) (n int, carries bool)
	// PreferredProcessing is the preferred block's time while it is still
	// processing (false: it is accepted), what the next block builds on.
	PreferredProcessing() (ts uint64, processing bool)
	// Snapshot is the membership the next block will have.
	Snapshot(ctx context.Context) (*execute.Membership, error)
	// Membership is a membership this node computed, by fingerprint.
	Membership(fingerprint ids.ID) (*execute.Membership, bool)
	CachedValidatorSet(height uint64) (*execute.ValidatorSet, bool)
	Round(ts uint64) uint64
}

// Gossip offers a transaction to the other validators after admitting it
// here (package gossip).
type Gossip interface {
	Offer(tx *txs.Tx) error
}

// Writer is the write path's API; its state belongs to its parts, each
// guarding its own: the signer (key, nonce), admission (what enters the
// pool, the lookup budget, bound heights), the committer (the queue of
// requests and their groups), the heartbeats, the pools of committed ids,
// and the tracker of rejections and replacements. Writer is safe for
// concurrent use.
type Writer struct {
	cfg       Config
	genesis   *config.Genesis
	chain     Chain
	mempool   *mempool.Mempool
	builds    Builds
	gossip    Gossip // nil without gossip; set before Start
	clock     clock.Clock
	tracker   *tracker
	accepted  *lru.Cache[ids.ID, acceptedReceipt]
	waiters   atomic.Int64 // receipt waits in progress
	pools     *pools
	committer *committer
	metrics   *metrics

	signer     *signer
	heartbeats *heartbeats
	admission  *admission

	// repinWanted is set when a build skipped stale work: the next accept
	// re-pins even if it changed no membership.
	repinWanted atomic.Bool

	stop       context.CancelFunc
	lifetime   context.Context // ends at Stop
	background sync.WaitGroup  // re-pinning, refills, heartbeats
}

// New returns the write path of c's node over pool.
func New(cfg Config, c Chain, pool *mempool.Mempool, builds Builds) (*Writer, error) {
	if cfg.Log == nil {
		cfg.Log = logging.NoLog{}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Signatures == nil {
		cfg.Signatures = execute.NewSignatureCache(1 << 14)
	}
	g := cfg.Genesis
	tracker := newTracker(g.TrackedTxs)
	w := &Writer{
		cfg: cfg, genesis: g, chain: c, mempool: pool, builds: builds, metrics: m, clock: cfg.Clock,
		tracker:  tracker,
		accepted: lru.NewCache[ids.ID, acceptedReceipt](acceptedReceipts),
		pools:    newPools(g.PoolChunkOrDefault(), g.PoolRanges),
		committer: newCommitter(g, cfg.Clock, m.groups, func() bool {
			_, processing := c.PreferredProcessing()
			return processing
		}, tracker.wait),
	}
	if w.signer, err = newSigner(cfg, cfg.Signatures); err != nil {
		return nil, err
	}
	w.heartbeats = &heartbeats{
		chain: c, nodeID: cfg.NodeID, genesis: g, clock: cfg.Clock, log: cfg.Log, signer: w.signer,
		submit: w.SubmitTx, pending: pool.Has, sent: map[uint64]*txs.Tx{},
	}
	w.admission = &admission{
		chain: c, genesis: g, networkID: cfg.NetworkID, chainID: cfg.ChainID, clock: cfg.Clock, sigs: cfg.Signatures,
		mempool: pool, refused: m.refused, depth: m.mempoolDepth,
	}
	return w, nil
}

// UseGossip makes SubmitTx offer this node's transactions to the other
// validators. Call it before Start.
func (w *Writer) UseGossip(g Gossip) { w.gossip = g }

// Start runs the group committer and, with Config.Heartbeats, the
// heartbeat loop.
func (w *Writer) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	w.stop, w.lifetime = cancel, ctx
	go w.committer.run(ctx, w.commitGroup)
	if w.cfg.Heartbeats {
		w.background.Add(1)
		go func() {
			defer w.background.Done()
			w.heartbeats.run(ctx)
		}()
	}
}

// Stop ends the committer and waits for background work.
func (w *Writer) Stop() {
	if w.stop == nil {
		return
	}
	w.stop()
	<-w.committer.done
	w.background.Wait()
}

// Accepted is the write path's part of a block's acceptance: included
// transactions leave the pool, stale ones are re-pinned when the block put
// a new membership in force (or a build found stale work), and waiters
// wake.
func (w *Writer) Accepted(b *chain.Block, inForce *execute.Membership, changed bool) {
	included := make([]ids.ID, len(b.Txs))
	for i, tx := range b.Txs {
		included[i] = tx.ID()
	}
	w.mempool.Remove(included...)
	repin := w.repinWanted.Swap(false)
	if w.admission.accepted(b.Block.Height) {
		// Transactions bound to this height or below that missed their
		// block are dead.
		repin = true
	}
	if b.HasPChainHeight && inForce != nil && (changed || repin) {
		w.repinStale(inForce)
	}
	w.mempool.Signal()
	w.metrics.mempoolDepth.Set(float64(w.mempool.Len()))
	w.committer.accepted() // before the waiters this accept answers count themselves
	w.decodeAccepted(b)
	w.tracker.wake()
}

// Rejected returns a rejected block's transactions to the pool (unless a
// competing block applied them); if the pool is full, their owners
// re-submit.
func (w *Writer) Rejected(b *chain.Block) {
	for _, tx := range b.Unapplied() {
		_ = w.mempool.Add(tx)
	}
	w.tracker.wake()
}

// Refused records that a build evicted tx for breaking a rule.
func (w *Writer) Refused(txID ids.ID, reason string) { w.tracker.reject(txID, reason) }

// RepinWanted asks the next accept to re-pin stale work.
func (w *Writer) RepinWanted() { w.repinWanted.Store(true) }

// signingMembership is the membership this node signs its transactions against,
// after checking that it owns every range: the membership in force at the
// last accepted block. Signing only against a membership in force is what
// makes re-pinning safe: a transaction is re-signed only once the
// membership it was signed against has been superseded on the accepted
// chain, and a superseded membership never comes back (a generation only
// grows), so the replaced transaction can never be applied. A range this
// node owns in the membership the next block will have (Snapshot) but not
// yet in the one in force answers chain.ErrNotReady, and makes the next
// block open the new membership; a range it owns now but not in the next
// membership answers NotOwner with the next owner.
func (w *Writer) signingMembership(ctx context.Context, ranges []string) (*execute.Membership, error) {
	next, err := w.chain.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if err := next.CheckOwner(ranges, w.cfg.NodeID); err != nil {
		return nil, err
	}
	now := w.chain.InForce()
	if now == nil {
		return nil, w.chain.NeedMembership()
	}
	if err := now.CheckOwner(ranges, w.cfg.NodeID); err != nil {
		w.builds.WantMembership()
		// Not wrapped: the caller must not route to the owner in force,
		// which is handing the range over.
		return nil, fmt.Errorf("%w: %w (%v; retry shortly)", chain.ErrNotReady, ErrMembershipOpening, err)
	}
	return now, nil
}

// pinFor is where this node signs a new transaction of ranges: the
// membership in force, bound to no block height (signingMembership), or,
// for a range that moves to this node when the next block opens the new
// membership, that membership (Snapshot) bound to the next block's height
// (txs.Header.BlockHeight). The bound transaction can ride in the block
// that moves the range, one height earlier than a write signed once that
// block is accepted: after a failover that is one proposer slot fewer to
// wait for, 5 s each time the slot is a dead validator's. Binding keeps
// re-signing safe although the membership is only predicted: the
// transaction is valid at that one height, whose block is the only one
// accepted there, so once it is accepted without the transaction, the
// transaction can never be applied and its owner re-signs it (repinStale).
// A processing block above the last accepted one may take the next height
// without it; then the range waits for the opening block as before
// (ErrMembershipOpening).
func (w *Writer) pinFor(ctx context.Context, ranges []string) (e *execute.Membership, blockHeight uint64, err error) {
	e, err = w.signingMembership(ctx, ranges)
	if !errors.Is(err, ErrMembershipOpening) {
		return e, 0, err
	}
	if n, _ := w.chain.Processing(ids.Empty); n != 0 {
		return nil, 0, err
	}
	last := w.chain.LastAccepted().Block
	next, serr := w.chain.Snapshot(ctx)
	if serr != nil || next.CheckOwner(ranges, w.cfg.NodeID) != nil || w.chain.LastAccepted().Block.Height != last.Height {
		return nil, 0, err
	}
	return next, last.Height + 1, nil
}

// metrics are the write path's series (docs/operating/operations.md lists them all).
type metrics struct {
	mempoolDepth prometheus.Gauge
	refused      *prometheus.CounterVec // admission refusals, by reason
	pooled       *prometheus.CounterVec // pooled allocations: "hit" or "wait" (for a reservation)
	openingWaits prometheus.Gauge       // requests waiting for the block that opens their range's move here
	bound        prometheus.Counter     // this node's transactions bound to the block that moves their ranges here
	boundMissed  prometheus.Counter     // of those, the ones that missed that block (re-signed or rejected)
	groups       *prometheus.CounterVec // signed groups, by why they closed
	receiptWaits prometheus.Gauge       // callers waiting for a transaction's decision
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		mempoolDepth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mempool_txs", Help: "pending transactions"}),
		refused:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "admission_refusals_total", Help: "transactions refused by admission (API, re-pinning, gossip), by reason"}, []string{"reason"}),
		pooled:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pooled_allocations_total", Help: "pooled allocations, by whether they waited for a reservation"}, []string{"outcome"}),
		openingWaits: prometheus.NewGauge(prometheus.GaugeOpts{Name: "opening_waits", Help: "requests waiting for the block that opens a membership in which this node owns their range"}),
		bound:        prometheus.NewCounter(prometheus.CounterOpts{Name: "bound_writes_total", Help: "transactions this node signed bound to the block that moves their ranges here"}),
		boundMissed:  prometheus.NewCounter(prometheus.CounterOpts{Name: "bound_writes_missed_total", Help: "bound transactions of this node that missed their block (then re-signed or rejected)"}),
		receiptWaits: prometheus.NewGauge(prometheus.GaugeOpts{Name: "receipt_waits", Help: "callers waiting for a transaction's decision (writes with wait, waitReceipt, pool refills)"}),
		groups:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "group_commits_total", Help: "allocate groups signed as one transaction, by why they closed: window (nobody else expected, or the accept a group held for answered nobody here), returned (the clients answered at the last accept are back), bound (groupCommitReturnMs passed, from the first request or from the accept a group held for), full, stopping"}, []string{"closed"}),
	}
	for _, c := range []prometheus.Collector{m.mempoolDepth, m.refused, m.pooled, m.openingWaits, m.bound, m.boundMissed, m.groups, m.receiptWaits} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// reason labels a refusal for the metric.
func reason(err error) string {
	if _, r := errcode.Of(err); r != "" {
		return r
	}
	return "other"
}
