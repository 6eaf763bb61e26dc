// Package chain is S-Chain's block tree: blocks over state layers, the
// processing set, the last accepted block and the preference, Verify,
// Accept and Reject, and the membership in force. It is the only package
// that changes chain state, and one lock (Chain.mu) guards all of it.
//
// Other parts of the VM learn of decisions through a Listener, called
// after the lock is released, in the engine's order; builders make blocks
// through a Draft.
package chain

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/utils/logging"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
)

var (
	// ErrNotReady means no membership is open yet or the P-chain set has no
	// usable validator.
	// It is the NotReady class itself: every error with the NotReady code
	// matches it under errors.Is.
	ErrNotReady = errcode.NotReady.Class()
	// ErrNoMembership is the NotReady of a chain that has not opened its first
	// membership: it is doing so (Config.OnNoMembership), and the caller
	// retries.
	ErrNoMembership = errcode.New(errcode.NotReady, "no_membership", "chain: the chain has not opened its first membership yet (it is doing so now; retry shortly)")
	// ErrNoBlock: no block is accepted at the height asked for (yet).
	ErrNoBlock = errcode.New(errcode.NotFound, "no_block", "chain: no block accepted at height")
)

// Listener learns of the engine's decisions, in order, after the chain
// released its lock (it may call back into the chain).
type Listener interface {
	// Accepted: b is accepted. inForce is the membership in force from b
	// on (nil before the first membership), changed reports whether b put it in
	// force (a new P-chain height or generation).
	Accepted(b *Block, inForce *execute.Membership, changed bool)
	// Rejected: b is rejected; its transactions not accepted elsewhere may
	// be offered again.
	Rejected(b *Block)
}

// Config is what a chain needs.
type Config struct {
	NetworkID  uint32
	ChainID    ids.ID
	SubnetID   ids.ID
	Genesis    *config.Genesis
	Validators Source
	// Clock is read only for the future-skew bound and the liveness round
	// new transactions are signed in.
	Clock      func() time.Time
	Log        logging.Logger
	Registerer prometheus.Registerer
	Listener   Listener
	// OnNoMembership is called when a caller needs a membership and none is open
	// yet, so that the builder makes the opening blocks.
	OnNoMembership func()
}

// Chain holds the block tree. It is safe for concurrent use; the engine's
// calls (parse, build, verify, accept, reject, preference) arrive one at a
// time.
type Chain struct {
	cfg         Config
	genesis     *config.Genesis
	state       *state.State
	validators  *validatorSets
	memberships *memberships
	snapshots   snapshotCache
	sigs        *execute.SignatureCache
	metrics     *metrics

	mu           sync.Mutex // guards the fields below
	processing   map[ids.ID]*Block
	lastAccepted *Block
	preferred    ids.ID
	newest       uint64 // newest P-chain height seen in a block context
	haveNewest   bool
	inForce      *execute.Membership // the membership of lastAccepted
}

// New opens the chain on db, creating the genesis block on first start and
// restoring the last accepted block on every later one.
func New(cfg Config, db database.Database, genesisBytes []byte) (*Chain, error) {
	if cfg.Log == nil {
		cfg.Log = logging.NoLog{}
	}
	if cfg.OnNoMembership == nil {
		cfg.OnNoMembership = func() {}
	}
	g := cfg.Genesis
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c := &Chain{
		cfg: cfg, genesis: g, metrics: m,
		validators:  newValidatorSets(cfg.Validators, cfg.SubnetID, g.ValidatorSetCache),
		memberships: newMemberships(g.ValidatorSetCache),
		sigs:        execute.NewSignatureCache(g.SignatureCache),
		processing:  map[ids.ID]*Block{},
	}
	if c.state, err = state.New(db, g.TxLimits); err != nil {
		return nil, err
	}
	last, err := c.state.LastAccepted()
	switch {
	case errors.Is(err, state.ErrNotInitialized):
		return c, c.acceptGenesis(genesisBytes)
	case err != nil:
		return nil, err
	}
	b, err := c.loadAccepted(last.ID)
	if err != nil {
		return nil, fmt.Errorf("restoring last accepted block %s: %w", last.ID, err)
	}
	c.lastAccepted, c.preferred = b, b.ID()
	c.noteHeight(b)
	if b.HasPChainHeight {
		if c.inForce, err = c.acceptedMembership(context.Background()); err != nil {
			return nil, fmt.Errorf("restoring the membership in force: %w", err)
		}
	}
	return c, nil
}

func (c *Chain) acceptGenesis(genesisBytes []byte) error {
	layer, err := c.state.NewLayer(nil)
	if err != nil {
		return err
	}
	root, err := layer.Seal()
	if err != nil {
		return err
	}
	blk, err := block.New(sha256.Sum256(genesisBytes), 0, c.genesis.Timestamp, false, 0, root, nil, c.genesis.BlockLimits)
	if err != nil {
		return err
	}
	if err := c.state.Accept(layer, blk.ID(), blk.Bytes()); err != nil {
		return err
	}
	c.lastAccepted = &Block{Block: blk, chain: c, accepted: true}
	c.preferred = blk.ID()
	return nil
}

func (c *Chain) loadAccepted(id ids.ID) (*Block, error) {
	b, err := c.state.Block(id)
	if err != nil {
		return nil, err
	}
	blk, err := block.Parse(b, c.genesis.BlockLimits, c.genesis.TxLimits)
	if err != nil {
		return nil, err
	}
	return &Block{Block: blk, chain: c, accepted: true}, nil
}

// find returns a processing block, the last accepted one, or an older
// accepted one. Called with c.mu held.
func (c *Chain) find(id ids.ID) (*Block, bool) {
	if b, ok := c.processing[id]; ok {
		return b, true
	}
	if c.lastAccepted.ID() == id {
		return c.lastAccepted, true
	}
	b, err := c.loadAccepted(id)
	return b, err == nil
}

// ParseBlock returns the known instance for a known block: the rpcchainvm
// server re-parses before Verify, and state lives on the instance.
func (c *Chain) ParseBlock(_ context.Context, b []byte) (snowman.Block, error) {
	id := ids.ID(sha256.Sum256(b))
	c.mu.Lock()
	defer c.mu.Unlock()
	if known, ok := c.processing[id]; ok {
		return known, nil
	}
	if c.lastAccepted.ID() == id {
		return c.lastAccepted, nil
	}
	blk, err := block.Parse(b, c.genesis.BlockLimits, c.genesis.TxLimits)
	if err != nil {
		return nil, err
	}
	// A block above the last accepted height cannot be accepted: every new
	// block the engine hears of is, so it costs no read of the database
	// (for a plugin, a round trip into the node).
	if blk.Height <= c.lastAccepted.Block.Height {
		if has, _ := c.state.Block(id); has != nil {
			return &Block{Block: blk, chain: c, accepted: true}, nil
		}
	}
	return &Block{Block: blk, chain: c}, nil
}

// GetBlock returns a processing or accepted block.
func (c *Chain) GetBlock(_ context.Context, id ids.ID) (snowman.Block, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.find(id); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w: block %s", database.ErrNotFound, id)
}

// SetPreference records where the next block goes.
func (c *Chain) SetPreference(id ids.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.preferred = id
}

// SeeHeight learns a P-chain height from a block context.
func (c *Chain) SeeHeight(h uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seeHeight(h)
}

// PreferredProcessing is the time (unix milliseconds) of the block the
// next one would be built on, when that block is still processing (false:
// the next block goes on an accepted one).
func (c *Chain) PreferredProcessing() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.processing[c.preferred]
	if !ok {
		return 0, false
	}
	return b.Block.Timestamp, true
}

// LastAccepted is the restored or newest accepted block.
func (c *Chain) LastAccepted() *Block {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastAccepted
}

// GetBlockIDAtHeight reads the height index.
func (c *Chain) GetBlockIDAtHeight(h uint64) (ids.ID, error) {
	id, err := c.state.BlockIDAtHeight(h)
	if errors.Is(err, state.ErrNotFound) {
		return ids.Empty, fmt.Errorf("%w: height %d", database.ErrNotFound, h)
	}
	return id, err
}

// AcceptedAt is the accepted block at height h (database.ErrNotFound
// above the last accepted height).
func (c *Chain) AcceptedAt(h uint64) (*block.Block, error) {
	id, err := c.GetBlockIDAtHeight(h)
	if errors.Is(err, database.ErrNotFound) {
		return nil, fmt.Errorf("%w %d (%w)", ErrNoBlock, h, err)
	}
	if err != nil {
		return nil, err
	}
	if last := c.LastAccepted(); last.ID() == id {
		return last.Block, nil
	}
	b, err := c.loadAccepted(id)
	if err != nil {
		return nil, err
	}
	return b.Block, nil
}

// State gives read access to accepted state.
func (c *Chain) State() state.Reader { return c.state.Accepted() }

// ListObjects reads one page of a bucket's live objects from accepted
// state.
func (c *Chain) ListObjects(q state.ObjectQuery) (*state.ObjectPage, error) {
	return c.state.ListObjects(q)
}

// ListReleased reads one page of a bucket's released list from accepted
// state.
func (c *Chain) ListReleased(q state.ReleasedQuery) (*state.ReleasedPage, error) {
	return c.state.ListReleased(q)
}

// Signatures is the verified-signature cache Verify and admission share.
func (c *Chain) Signatures() *execute.SignatureCache { return c.sigs }

// NewestHeight is the newest P-chain height this node has seen in a block
// context: what new transactions are pinned to.
func (c *Chain) NewestHeight() (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newest, c.haveNewest
}

// Processing reports how many blocks are verified and undecided, and
// whether one of them carries txID.
func (c *Chain) Processing(txID ids.ID) (n int, carries bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.processing {
		for _, tx := range b.Txs {
			if tx.ID() == txID {
				carries = true
			}
		}
	}
	return len(c.processing), carries
}

// ValidatorSet is the P-chain validator set at height (cached).
func (c *Chain) ValidatorSet(ctx context.Context, height uint64) (*execute.ValidatorSet, error) {
	return c.validators.Get(ctx, height)
}

// CachedValidatorSet is the validator set at height if this node holds it,
// without a lookup.
func (c *Chain) CachedValidatorSet(height uint64) (*execute.ValidatorSet, bool) {
	return c.validators.cached(height)
}

func (c *Chain) noteHeight(b *Block) {
	if b.HasPChainHeight {
		c.seeHeight(b.PChainHeight)
	}
}

func (c *Chain) seeHeight(h uint64) {
	if !c.haveNewest || h > c.newest {
		c.newest, c.haveNewest = h, true
		c.metrics.pChainHeight.Set(float64(h))
	}
}

// Round is the liveness round of a timestamp (unix milliseconds).
func (c *Chain) Round(ts uint64) uint64 { return c.genesis.Liveness().Round(ts) }

// CurrentRound is the liveness round of this node's clock, or of the last
// accepted block if that is ahead: what new transactions are signed in.
func (c *Chain) CurrentRound() uint64 {
	c.mu.Lock()
	lastTs := c.lastAccepted.Block.Timestamp
	c.mu.Unlock()
	return c.Round(max(uint64(c.cfg.Clock().UnixMilli()), lastTs))
}

// UntilNextRound is how long until the next liveness round starts by this
// node's clock (or by the last accepted block's timestamp, if ahead).
func (c *Chain) UntilNextRound() time.Duration {
	c.mu.Lock()
	lastTs := c.lastAccepted.Block.Timestamp
	c.mu.Unlock()
	now := max(uint64(c.cfg.Clock().UnixMilli()), lastTs)
	next := (c.Round(now) + 1) * c.genesis.RoundDurationMs
	return time.Duration(next-now) * time.Millisecond
}

// UntilMidRound is how long until the middle of the liveness round of
// this node's clock (zero once it has passed), and whether a block dated
// ts, the newest one, came before that middle: the builder's ticks are
// for such a round.
func (c *Chain) UntilMidRound(ts uint64) (time.Duration, bool) {
	d := c.genesis.RoundDurationMs
	now := max(uint64(c.cfg.Clock().UnixMilli()), ts)
	mid := c.Round(now)*d + d/2
	if now >= mid {
		return 0, ts < mid
	}
	return time.Duration(mid-now) * time.Millisecond, ts < mid
}

// Until is how long this node's clock takes to reach ms (unix
// milliseconds); not positive once it has.
func (c *Chain) Until(ms uint64) time.Duration {
	return time.Duration(int64(ms)-c.cfg.Clock().UnixMilli()) * time.Millisecond
}

// RoundLength is the liveness round's duration.
func (c *Chain) RoundLength() time.Duration {
	return time.Duration(c.genesis.RoundDurationMs) * time.Millisecond
}

// NeedMembership is what a caller that needs a membership gets before the
// chain has one: ErrNoMembership, after asking the builder for the opening
// blocks.
func (c *Chain) NeedMembership() error {
	c.cfg.OnNoMembership()
	return ErrNoMembership
}
