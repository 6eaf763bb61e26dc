package chain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"go.uber.org/zap"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/execute"
)

var (
	ErrUnknownParent          = errors.New("chain: parent is neither verified nor last accepted")
	ErrWrongHeight            = errors.New("chain: height is not parent height + 1")
	ErrTimeBackward           = errors.New("chain: timestamp before the parent's")
	ErrTimeFuture             = errors.New("chain: timestamp too far in the future")
	ErrPChainHeightBackward   = errors.New("chain: P-chain height below the parent's")
	ErrPChainHeightMismatch   = errors.New("chain: P-chain height differs from the block context's")
	ErrMissingContext         = errors.New("chain: a block with a P-chain height must be verified with a block context")
	ErrUnexpectedPChainHeight = errors.New("chain: a block verified without context cannot carry a P-chain height")
	ErrWrongRoot              = errors.New("chain: state root differs from the executed state")
	ErrNotProcessing          = errors.New("chain: block is not processing")
)

var (
	_ snowman.Block               = (*Block)(nil)
	_ snowblock.WithVerifyContext = (*Block)(nil)
)

// Block is a block as the engine sees it: the wire block plus its place in
// the chain (its state layer while processing).
type Block struct {
	*block.Block
	chain *Chain

	layer *state.Layer // set once verified, until decided
	// changed is set when the block puts a new membership in force (a new
	// P-chain height or generation); moved, set at acceptance, when that
	// membership's members differ from the one before (ranges change
	// owners).
	changed  bool
	moved    bool
	accepted bool
	rejected bool
}

func (b *Block) Parent() ids.ID       { return b.Block.Parent }
func (b *Block) Height() uint64       { return b.Block.Height }
func (b *Block) Timestamp() time.Time { return time.UnixMilli(int64(b.Block.Timestamp)) }
func (b *Block) verified() bool       { return b.layer != nil }
func (b *Block) decided() bool        { return b.accepted || b.rejected }

// ShouldVerifyWithContext asks for the P-chain context exactly when the block
// carries a P-chain height.
func (b *Block) ShouldVerifyWithContext(context.Context) (bool, error) { return b.HasPChainHeight, nil }

// Verify checks a block built without a P-chain context: such a block
// carries no P-chain height and no transactions.
func (b *Block) Verify(ctx context.Context) error {
	b.chain.mu.Lock()
	defer b.chain.mu.Unlock()
	if b.HasPChainHeight {
		return ErrMissingContext
	}
	return b.chain.timedVerify(ctx, b, nil)
}

// VerifyWithContext checks the block against the P-chain height the proposer
// VM recorded for it.
func (b *Block) VerifyWithContext(ctx context.Context, bctx *snowblock.Context) error {
	b.chain.mu.Lock()
	defer b.chain.mu.Unlock()
	if !b.HasPChainHeight {
		return ErrUnexpectedPChainHeight
	}
	return b.chain.timedVerify(ctx, b, bctx)
}

// Accept commits the block's layer in one batch, then tells the listener.
func (b *Block) Accept(context.Context) error {
	c := b.chain
	c.mu.Lock()
	inForce, err := c.accept(b)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if c.cfg.Listener != nil {
		c.cfg.Listener.Accepted(b, inForce, b.changed)
	}
	return nil
}

// Reject drops the block's layer, then tells the listener.
func (b *Block) Reject(context.Context) error {
	c := b.chain
	c.mu.Lock()
	first := c.reject(b)
	c.mu.Unlock()
	if first && c.cfg.Listener != nil {
		c.cfg.Listener.Rejected(b)
	}
	return nil
}

func (c *Chain) timedVerify(ctx context.Context, b *Block, bctx *snowblock.Context) error {
	start := time.Now()
	err := c.verify(ctx, b, bctx)
	c.metrics.verifySeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		c.metrics.invalidBlocks.Inc()
		c.cfg.Log.Warn("block failed verification", zap.Stringer("blkID", b.ID()), zap.Uint64("height", b.Block.Height), zap.Error(err))
	}
	return err
}

// verify runs the header rules and executes the transactions on a layer
// chained on the parent's. It is pure: no clock but the skew bound, no I/O
// beyond the validator-set cache. Called with c.mu held.
func (c *Chain) verify(ctx context.Context, b *Block, bctx *snowblock.Context) error {
	if b.decided() {
		return ErrNotProcessing
	}
	// The context is checked on every call, before the early return of an
	// already verified block: the proposer VM can wrap one inner block in
	// proposer blocks of different P-chain heights, and the verdict on each
	// must not depend on which of them this node saw first.
	if bctx != nil && b.PChainHeight != bctx.PChainHeight {
		return fmt.Errorf("%w: block %d, context %d", ErrPChainHeightMismatch, b.PChainHeight, bctx.PChainHeight)
	}
	if b.verified() {
		return nil
	}
	parent, ok := c.find(b.Block.Parent)
	if !ok || !c.extendable(parent) {
		return fmt.Errorf("%w: %s", ErrUnknownParent, b.Block.Parent)
	}
	switch {
	case b.Block.Height != parent.Block.Height+1:
		return fmt.Errorf("%w: %d after %d", ErrWrongHeight, b.Block.Height, parent.Block.Height)
	case b.Block.Timestamp < parent.Block.Timestamp:
		return fmt.Errorf("%w: %d < %d", ErrTimeBackward, b.Block.Timestamp, parent.Block.Timestamp)
	case b.Block.Timestamp > uint64(c.cfg.Clock().Add(c.genesis.MaxTimeSkew()).UnixMilli()):
		return fmt.Errorf("%w: %d", ErrTimeFuture, b.Block.Timestamp)
	case b.HasPChainHeight && parent.HasPChainHeight && b.PChainHeight < parent.PChainHeight:
		return fmt.Errorf("%w: %d < %d", ErrPChainHeightBackward, b.PChainHeight, parent.PChainHeight)
	}
	layer, changed, err := c.execute(ctx, parent, b.Block)
	if err != nil {
		return err
	}
	if layer.Root() != b.StateRoot {
		c.state.Reject(layer)
		return fmt.Errorf("%w: header %s, executed %s", ErrWrongRoot, b.StateRoot, layer.Root())
	}
	b.layer, b.changed = layer, changed
	c.processing[b.ID()] = b
	c.noteHeight(b)
	return nil
}

// execute applies blk's transactions on a new layer over parent and seals
// it; changed reports whether the block put a new membership in force. The
// caller owns the returned layer.
func (c *Chain) execute(ctx context.Context, parent *Block, blk *block.Block) (layer *state.Layer, changed bool, err error) {
	ec, err := c.execContext(ctx, blk.HasPChainHeight, blk.PChainHeight, blk.Height, blk.Timestamp)
	if err != nil {
		return nil, false, err
	}
	layer, err = c.state.NewLayer(parent.layerForChild())
	if err != nil {
		return nil, false, err
	}
	err = execute.Block(layer, ec, blk.Txs)
	if err == nil {
		_, err = layer.Seal()
	}
	if err != nil {
		c.state.Reject(layer)
		return nil, false, err
	}
	return layer, ec.MembershipChanged, nil
}

// extendable reports whether a child may be built or verified on b: b is
// processing, or it is the last accepted block (an older accepted block's
// other children would conflict with the accepted chain).
func (c *Chain) extendable(b *Block) bool {
	return b.verified() || (b.accepted && b.ID() == c.lastAccepted.ID())
}

// layerForChild is the layer a child executes on: nil (accepted state) once
// this block is accepted.
func (b *Block) layerForChild() *state.Layer {
	if b.accepted {
		return nil
	}
	return b.layer
}

// execContext fixes what a block's execution depends on: for a block with a
// P-chain context, the validator set at its P-chain height and the liveness
// round of its timestamp, from which execute.Block opens or finds the
// membership.
func (c *Chain) execContext(ctx context.Context, hasPChainHeight bool, pChainHeight, height, timestamp uint64) (*execute.Context, error) {
	ec := &execute.Context{
		NetworkID:  c.cfg.NetworkID,
		ChainID:    c.cfg.ChainID,
		Limits:     c.genesis.TxLimits,
		Height:     height,
		Time:       timestamp,
		Signatures: c.sigs,
		Liveness:   c.genesis.Liveness(),
		Rules:      c.genesis.Upgrades.Rules(height),
		Round:      c.Round(timestamp),
		Restrict:   c.memberships.restrict,

		ReplayPruneLimit: c.genesis.ReplayPruneLimit(),
	}
	if hasPChainHeight {
		v, err := c.validators.Get(ctx, pChainHeight)
		switch {
		case errors.Is(err, ErrNoValidators):
			// No usable validator at this height: the block carries
			// nothing and opens no membership, on every node alike.
		case err != nil:
			return nil, err
		default:
			ec.Validators = v
		}
	}
	return ec, nil
}

// accept commits b and returns the membership in force after it. Called
// with c.mu held.
func (c *Chain) accept(b *Block) (*execute.Membership, error) {
	if !b.verified() || b.decided() {
		return nil, fmt.Errorf("%w: %s", ErrNotProcessing, b.ID())
	}
	start := time.Now()
	if err := c.state.Accept(b.layer, b.ID(), b.Bytes()); err != nil {
		return nil, fmt.Errorf("accepting %s at height %d: %w", b.ID(), b.Block.Height, err)
	}
	c.metrics.acceptSeconds.Observe(time.Since(start).Seconds())
	c.metrics.height.Set(float64(b.Block.Height))
	for _, tx := range b.Txs {
		c.metrics.acceptedTxs.WithLabelValues(tx.Kind()).Inc()
		c.metrics.acceptedEntries.WithLabelValues(tx.Kind()).Add(float64(tx.Entries()))
	}
	b.accepted, b.layer = true, nil
	delete(c.processing, b.ID())
	c.lastAccepted = b
	if b.HasPChainHeight && (b.changed || c.inForce == nil) {
		e, err := c.acceptedMembership(context.Background())
		switch {
		case err != nil:
			c.cfg.Log.Warn("cannot compute the membership in force", zap.Error(err))
		case e != nil:
			b.moved = b.changed && c.inForce != nil && !slices.Equal(c.inForce.Record().Members, e.Record().Members)
			c.inForce = e
			c.metrics.members.Set(float64(e.Len()))
			if b.changed {
				m := e.Record()
				c.cfg.Log.Info("membership in force",
					zap.Uint64("pChainHeight", m.PChainHeight), zap.Uint64("round", m.Round),
					zap.Uint64("generation", m.Generation), zap.Int("members", len(m.Members)),
					zap.Bool("fallback", m.Fallback), zap.Uint64("height", b.Block.Height))
			}
		}
	}
	return c.inForce, nil
}

// reject drops b; it reports whether b was undecided. Called with c.mu
// held.
func (c *Chain) reject(b *Block) bool {
	if b.decided() {
		return false
	}
	if b.layer != nil {
		c.state.Reject(b.layer)
	}
	b.rejected, b.layer = true, nil
	delete(c.processing, b.ID())
	return true
}

// Changed reports whether the block put a new membership in force.
func (b *Block) Changed() bool { return b.changed }

// Moved reports whether the accepted block put in force a membership with
// other members than the one before (a new P-chain height with the same
// validators moves no range).
func (b *Block) Moved() bool { return b.moved }

// Unapplied returns the block's transactions the accepted chain has not
// applied: what the listener of a rejected block offers back to the pool.
func (b *Block) Unapplied() []*txs.Tx {
	accepted := b.chain.state.Accepted()
	var out []*txs.Tx
	for _, tx := range b.Txs {
		if _, err := accepted.Receipt(tx.ID()); err == nil {
			continue // a competing block already committed it
		}
		out = append(out, tx)
	}
	return out
}
