// Package certifier gives a node finality certificates for the blocks it
// accepted. It signs the certificate statement of a block only once it has
// itself accepted it: it pushes that signature to the other validators as
// it accepts, and answers peers who ask (avalanchego's ACP-118 signature
// requests). In the background it gathers the other validators' signatures
// on each accepted block no certificate covers yet (the newest few),
// pushed or, when pushes fall short, asked for, until they carry more than
// 2/3 of the stake at the block's P-chain height, then stores the
// certificate with the block.
//
// A certificate over height h covers every block below it, so the work is
// bounded however fast blocks come: at most maxOpen blocks at a time, one
// aggregate check per certificate (the newest block with a quorum first),
// one request round at a time on the newest block. Package certificate
// checks certificates offline.
package certifier

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/cache/lru"
	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/prefixdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/p2p"
	"github.com/ava-labs/avalanchego/network/p2p/acp118"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/internal/clock"
	"github.com/s-chain/schain/vm/block"
)

var (
	// ErrNotFinal: no certificate covers the height yet. Retry later.
	ErrNotFinal = errcode.New(errcode.NotReady, "not_final", "certifier: no finality certificate covers this height yet")
	// ErrOff: this node makes no certificates (Config.Off). Another node
	// may.
	ErrOff = errcode.New(errcode.NotFound, "certificates_off", "certifier: this node makes no finality certificates (its chain config says certificates: false); ask another node")
	// ErrStalled is what Health reports once an accepted block has waited
	// too long for a certificate.
	ErrStalled = errcode.New(errcode.NotReady, "finality_stalled", "certifier: finality certificates stalled")
)

// Timing of request rounds (pushes need none; see pullAfter). A round
// waits for the answers of one request to every validator that has not
// signed yet; peers that had not accepted the block are asked again after
// a short backoff, which grows while no progress is made.
const (
	roundTimeout = 2 * time.Second
	// retryDelay is the first delay before asking again a validator that
	// had not accepted the block; it grows by retryDelay up to
	// maxRetryDelay, for at most notAcceptedFor in a round (then the
	// round's backoff takes over). Linear, not doubling: a doubling delay
	// overshoots the moment the validator accepts by as much as it waited.
	retryDelay     = 10 * time.Millisecond
	maxRetryDelay  = 50 * time.Millisecond
	notAcceptedFor = 1280 * time.Millisecond
	minBackoff     = 20 * time.Millisecond
	// minInterval paces request rounds: one starts at least this long
	// after the previous one started, so that their cost stays bounded
	// however fast blocks come (blocks accepted meanwhile are covered
	// together by the next certificate).
	minInterval = 50 * time.Millisecond
	maxBackoff  = 2 * time.Second
	// maxOpen bounds the blocks certified at once: the newest accepted
	// ones without a certificate (older ones are covered by theirs).
	maxOpen = 8
	// maxTracked bounds the accept times kept for the latency metric.
	maxTracked = 4096
	// DefaultStallAfter is how long a block may wait for a certificate
	// before Health fails.
	DefaultStallAfter = time.Minute
)

// Requester sends a request to nodes and calls back once per node with the
// answer or the failure (*p2p.Client).
type Requester interface {
	AppRequest(ctx context.Context, nodeIDs set.Set[ids.NodeID], request []byte, onResponse p2p.AppResponseCallback) error
}

// Source is the P-chain's validator sets (validators.State).
type Source interface {
	GetValidatorSet(ctx context.Context, height uint64, subnetID ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error)
}

// Config is what the certifier needs from its node.
type Config struct {
	NetworkID  uint32
	ChainID    ids.ID
	SubnetID   ids.ID
	NodeID     ids.NodeID
	Signer     warp.Signer
	Validators Source
	// Clock is the chain's time, what acceptance and finality latencies
	// are measured on.
	Clock func() time.Time
	// Timers paces request rounds and saves (nil: the system's clock).
	Timers     clock.Clock
	Log        logging.Logger
	Registerer prometheus.Registerer
	// StallAfter: Health fails once an accepted block waited this long for
	// a certificate (DefaultStallAfter when zero).
	StallAfter time.Duration
	// Off makes the node collect no certificates: it still signs what it
	// accepted when asked, but pushes nothing and asks nobody. What
	// certificates cost is measured against such a network.
	Off bool
	// Rules are the other messages this node signs over the same ACP-118
	// handler, by payload (the validator manager's removals); none: only
	// certificate statements.
	Rules []Rule
}

// Certifier signs statements of accepted blocks and collects certificates.
type Certifier struct {
	cfg       Config
	blocks    Blocks
	store     *store
	signing   signing
	requester Requester
	gossiper  Gossiper
	metrics   *metrics
	sets      *lru.Cache[uint64, validators.WarpSet]
	// signatures are this node's signatures by message ID, shared by the
	// handler (peers' requests) and its own attempts: one signing a block.
	signatures *lru.Cache[ids.ID, []byte]
	wake       chan struct{}
	done       chan struct{}
	stop       context.CancelFunc
	// pushedHeight is the newest block this node pushed its signature
	// for, audience who it pushed to, and open the attempts on uncovered
	// blocks by height; only the background goroutine touches them.
	pushedHeight uint64
	audience     audience
	open         map[uint64]*attempt

	mu sync.Mutex // guards the fields below
	// recent are the newest accepted blocks, at most maxOpen, oldest
	// first (never empty: the last accepted block is the last one): the
	// ones this node pushes signatures for and certifies.
	recent    []*block.Block
	certified uint64
	changed   chan struct{} // closed and replaced when certified moves
	accepted  map[uint64]time.Time
	// waiting is when the oldest block no certificate covers was accepted
	// (zero: none).
	waiting time.Time
	// uncoveredSince is waiting on this machine's clock (cfg.Clock may be
	// a test's), for pacing requests; approximate after a certificate.
	uncoveredSince time.Time
	// missing are the validators whose signatures the last short round
	// lacked, for Health.
	missing []ids.NodeID
	// pushed are peers' signatures not taken yet; members are the newest
	// validator set's nodes, the only senders kept.
	pushed  pushes
	members set.Set[ids.NodeID]
	// peers are the heights members pushed signatures for (peers.go).
	peers peerHeights
}

// audience is the validator set of one P-chain height as push needs it,
// built once per height rather than once per accepted block.
type audience struct {
	pChainHeight uint64
	members      set.Set[ids.NodeID] // every validator's nodes
	others       set.Set[ids.NodeID] // members but this node
	// stake is each member's part of the set's weight (a key's weight,
	// split evenly between the nodes sharing it), total the set's.
	stake map[ids.NodeID]uint64
	total uint64
}

// New restores the certifier's progress from db (a part of the chain's
// database it owns). last is the last accepted block.
func New(cfg Config, db database.Database, blocks Blocks, last *block.Block) (*Certifier, error) {
	if cfg.Log == nil {
		cfg.Log = logging.NoLog{}
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Timers == nil {
		cfg.Timers = clock.Real()
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = DefaultStallAfter
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Certifier{
		cfg: cfg, blocks: blocks, store: &store{db: prefixdb.New([]byte("certificates"), db)},
		signing: signing{networkID: cfg.NetworkID, chainID: cfg.ChainID, blocks: blocks, rules: cfg.Rules},
		metrics: m, sets: lru.NewCache[uint64, validators.WarpSet](8), signatures: lru.NewCache[ids.ID, []byte](1024),
		wake: make(chan struct{}, 1), changed: make(chan struct{}), accepted: map[uint64]time.Time{},
		pushed: pushes{}, pushedHeight: last.Height, open: map[uint64]*attempt{},
		recent: []*block.Block{last},
	}
	if c.certified, err = c.store.last(); err != nil {
		return nil, err
	}
	if last.Height > c.certified {
		c.waiting, c.uncoveredSince = cfg.Clock(), cfg.Timers.Now()
	}
	c.updateGauges()
	return c, nil
}

// Handler is the signature-request handler to register on the node's p2p
// network under acp118.HandlerID: it signs only what signing allows (a
// certificate statement of a block it accepted, or what one of
// Config.Rules allows), caching statements' signatures by message.
func (c *Certifier) Handler() p2p.Handler {
	cached := acp118.NewCachedHandler(c.signatures, c.signing, c.cfg.Signer)
	if len(c.signing.rules) == 0 {
		return cached
	}
	return signatureHandler{cached: cached, fresh: acp118.NewHandler(c.signing, c.cfg.Signer), signing: c.signing}
}

// Start collects certificates in the background until Stop: it pushes this
// node's signatures through g and asks for missing ones through r. Without
// them (no network) only this node's own signature counts.
func (c *Certifier) Start(r Requester, g Gossiper) {
	if c.cfg.Off {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.requester, c.gossiper, c.stop, c.done = r, g, cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		c.run(ctx)
		c.save() // what waits in memory, before Stop returns
	}()
}

// Stop ends the background work and waits for it.
func (c *Certifier) Stop() {
	if c.stop == nil {
		return
	}
	c.stop()
	<-c.done
}

// Accepted tells the certifier about a newly accepted block.
func (c *Certifier) Accepted(b *block.Block) {
	if c.cfg.Off {
		return
	}
	now := c.cfg.Clock()
	c.mu.Lock()
	c.recent = append(c.recent, b)
	if len(c.recent) > maxOpen {
		c.recent = slices.Delete(c.recent, 0, len(c.recent)-maxOpen)
	}
	if b.Height > c.certified {
		if len(c.accepted) < maxTracked {
			c.accepted[b.Height] = now
		}
		if c.waiting.IsZero() {
			c.waiting, c.uncoveredSince = now, c.cfg.Timers.Now()
		}
	}
	c.updateGauges()
	c.mu.Unlock()
	c.nudge()
}

// nudge wakes the background goroutine.
func (c *Certifier) nudge() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Certified is the newest certified height: every accepted block at or
// below it is final.
func (c *Certifier) Certified() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.certified
}

// WaitFinal returns once a certificate covers height, or with ctx's error.
func (c *Certifier) WaitFinal(ctx context.Context, height uint64) error {
	if c.cfg.Off {
		return ErrOff
	}
	for {
		c.mu.Lock()
		done, changed := c.certified >= height, c.changed
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Covering is the certificate that makes height final: the lowest one at
// or above it. ErrNotFinal while none does.
func (c *Certifier) Covering(height uint64) (*certificate.Certificate, error) {
	if c.cfg.Off {
		return nil, ErrOff
	}
	if height > c.Certified() {
		return nil, fmt.Errorf("%w: height %d (certified up to %d)", ErrNotFinal, height, c.Certified())
	}
	cert, err := c.store.covering(height)
	if errors.Is(err, database.ErrNotFound) {
		return nil, fmt.Errorf("%w: height %d", ErrNotFinal, height)
	}
	return cert, err
}

// Health reports certification progress, and ErrStalled with the
// validators whose signatures are missing once a block waited more than
// StallAfter.
func (c *Certifier) Health() (map[string]any, error) {
	if c.cfg.Off {
		return map[string]any{"certificates": "off"}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	details := map[string]any{"certifiedHeight": c.certified, "uncertifiedBlocks": c.lastHeight() - min(c.certified, c.lastHeight())}
	if c.waiting.IsZero() {
		return details, nil
	}
	waited := c.cfg.Clock().Sub(c.waiting)
	details["uncertifiedForMs"] = waited.Milliseconds()
	if waited <= c.cfg.StallAfter {
		return details, nil
	}
	return details, fmt.Errorf("%w: no certificate for %s (certified up to height %d of %d); missing signatures of %v: with more than 1/3 of the stake unreachable or not accepting, nothing becomes final until they return or leave the subnet (schain validators status)",
		ErrStalled, waited.Round(time.Second), c.certified, c.lastHeight(), c.missing)
}

// lastHeight is the last accepted block's height. Callers hold mu.
func (c *Certifier) lastHeight() uint64 { return c.recent[len(c.recent)-1].Height }

func (c *Certifier) updateGauges() {
	c.metrics.certified.Set(float64(c.certified))
	c.metrics.uncertified.Set(float64(c.lastHeight() - min(c.certified, c.lastHeight())))
}

// recentBlocks are the newest accepted blocks (at most maxOpen, oldest
// first) and the certified height.
func (c *Certifier) recentBlocks() ([]*block.Block, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recent), c.certified
}

func (c *Certifier) run(ctx context.Context) {
	backoff := minBackoff
	var (
		started time.Time // when the newest request round started
		retry   time.Time // no request round before this, after a short one
	)
	timers := c.cfg.Timers
	timer := timers.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		saveAt, unsaved := c.store.saveDue()
		if unsaved && !timers.Now().Before(saveAt) {
			c.save()
			saveAt, unsaved = c.store.saveDue()
		}
		c.pushAccepted(ctx)
		if err := c.openAttempts(ctx); err != nil {
			c.cfg.Log.Warn("certificate attempt not started", zap.Error(err))
			if !c.sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		c.adoptPushes()
		if c.certifyBest() {
			backoff, retry = minBackoff, time.Time{}
			continue
		}
		// Ask for the missing signatures on the newest block once pushes
		// had their chance: pullAfter past the oldest uncovered block's
		// acceptance, rounds at least minInterval apart, and backing off
		// while short.
		a := c.newestOpen()
		var due time.Time
		if a != nil {
			due = maxTime(c.waitingSince().Add(pullAfter), started.Add(minInterval), retry)
		}
		if a != nil && !timers.Now().Before(due) {
			started = timers.Now()
			progressed, err := c.collect(ctx, a)
			if err == nil && (a.quorum() || c.quorumInSight()) {
				continue // certified at the top of the loop
			}
			c.metrics.rounds.WithLabelValues("short").Inc()
			c.noteMissing(a)
			if progressed {
				backoff = minBackoff
			}
			retry = timers.Now().Add(backoff)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		var fire <-chan time.Time
		if a != nil || unsaved {
			switch {
			case a == nil:
				due = saveAt
			case unsaved && saveAt.Before(due):
				due = saveAt
			}
			timer.Reset(due.Sub(timers.Now()))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-fire:
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
	}
}

// openAttempts keeps one attempt per accepted block no certificate covers
// yet, among the newest maxOpen: a block's certificate comes as soon as
// its signatures do, even when a newer block was accepted meanwhile, and
// blocks certified or too old (a newer certificate will cover them) are
// forgotten.
func (c *Certifier) openAttempts(ctx context.Context) error {
	blocks, certified := c.recentBlocks()
	for h, a := range c.open {
		if h <= certified || !slices.ContainsFunc(blocks, func(b *block.Block) bool { return b.ID() == a.statement.BlockID }) {
			delete(c.open, h)
		}
	}
	for _, b := range blocks {
		if b.Height <= certified || !b.HasPChainHeight || c.open[b.Height] != nil {
			continue
		}
		a, err := c.newAttempt(ctx, b)
		if err != nil {
			return fmt.Errorf("height %d: %w", b.Height, err)
		}
		c.open[b.Height] = a
	}
	return nil
}

// newestOpen is the attempt on the newest uncovered block (nil: none).
func (c *Certifier) newestOpen() *attempt {
	var newest *attempt
	for h, a := range c.open {
		if newest == nil || h > newest.statement.Height {
			newest = a
		}
	}
	return newest
}

// certifyBest certifies the newest block whose signatures carry a quorum,
// checking them (one aggregate); it reports whether it stored one.
func (c *Certifier) certifyBest() bool {
	heights := slices.Sorted(maps.Keys(c.open))
	slices.Reverse(heights)
	for _, h := range heights {
		a := c.open[h]
		if !a.inSight() {
			continue
		}
		c.drop(a, a.check())
		if a.quorum() && c.finished(a) {
			return true
		}
	}
	return false
}

// quorumInSight: some open attempt holds signatures that would make a
// quorum once checked.
func (c *Certifier) quorumInSight() bool {
	for _, a := range c.open {
		if a.inSight() {
			return true
		}
	}
	return false
}

// finished stores a's certificate, logging when it could not.
func (c *Certifier) finished(a *attempt) bool {
	if err := c.finish(a); err != nil {
		c.cfg.Log.Warn("certificate not stored", zap.Uint64("height", a.statement.Height), zap.Error(err))
		return false
	}
	return true
}

// pushAccepted pushes this node's signature on each block accepted since
// its last push (among the newest maxOpen), so that every validator can
// certify each block as soon as the last of them accepts it.
func (c *Certifier) pushAccepted(ctx context.Context) {
	blocks, _ := c.recentBlocks()
	for _, b := range blocks {
		if b.Height > c.pushedHeight {
			c.pushedHeight = b.Height
			c.push(ctx, b)
		}
	}
}

// waitingSince is when the oldest block no certificate covers was accepted
// (now when none waits).
func (c *Certifier) waitingSince() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uncoveredSince.IsZero() {
		return c.cfg.Timers.Now()
	}
	return c.uncoveredSince
}

func maxTime(ts ...time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

func (c *Certifier) sleep(ctx context.Context, d time.Duration) bool {
	t := c.cfg.Timers.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// finish aggregates a's signatures, stores the certificate and wakes the
// waiters.
func (c *Certifier) finish(a *attempt) error {
	if a.statement.Height <= c.Certified() {
		return nil // a newer certificate covers it (only this goroutine moves certified)
	}
	// Every signature in a.sigs was checked (check), so the aggregate
	// verifies without checking it again.
	cert, err := certificate.Aggregate(a.statement, a.sigs)
	if err != nil {
		return err
	}
	if err := c.store.add(cert, c.cfg.Timers.Now()); err != nil {
		// Kept in memory, readable, and tried again: the certificate
		// stands whether or not this node's copy reached the disk.
		c.cfg.Log.Warn("certificates not saved", zap.Error(err))
	}
	now := c.cfg.Clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.certified = cert.Height
	for h, at := range c.accepted {
		if h <= cert.Height {
			c.metrics.latency.Observe(now.Sub(at).Seconds())
			delete(c.accepted, h)
		}
	}
	c.waiting, c.uncoveredSince = time.Time{}, time.Time{}
	if c.lastHeight() > c.certified {
		c.waiting, c.uncoveredSince = now, c.cfg.Timers.Now()
		if at, ok := c.accepted[c.certified+1]; ok {
			c.waiting = at
		}
	}
	c.missing = nil
	c.prunePushes()
	close(c.changed)
	c.changed = make(chan struct{})
	c.updateGauges()
	c.metrics.rounds.WithLabelValues("certified").Inc()
	return nil
}

// save writes the certificates waiting in memory, logging when it could
// not (they stay in memory and are tried again saveAfter later).
func (c *Certifier) save() {
	if err := c.store.save(c.cfg.Timers.Now()); err != nil {
		c.cfg.Log.Warn("certificates not saved", zap.Error(err))
	}
}

func (c *Certifier) noteMissing(a *attempt) {
	if a == nil {
		return
	}
	var missing []ids.NodeID
	for i, v := range a.set.Validators {
		if _, ok := a.sigs[i]; !ok {
			missing = append(missing, v.NodeIDs...)
		}
	}
	c.mu.Lock()
	c.missing = missing
	c.mu.Unlock()
}

// validatorSet is the canonical set at a P-chain height (cached).
func (c *Certifier) validatorSet(ctx context.Context, height uint64) (validators.WarpSet, error) {
	if s, ok := c.sets.Get(height); ok {
		return s, nil
	}
	vals, err := c.cfg.Validators.GetValidatorSet(ctx, height, c.cfg.SubnetID)
	if err != nil {
		return validators.WarpSet{}, fmt.Errorf("validator set at P-chain height %d: %w", height, err)
	}
	s, err := validators.FlattenValidatorSet(vals)
	if err != nil {
		return validators.WarpSet{}, err
	}
	c.sets.Put(height, s)
	return s, nil
}
