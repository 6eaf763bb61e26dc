package vm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"go.uber.org/zap"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/epochs"
	"github.com/s-chain/schain/vm/execute"
)

var (
	ErrUnknownParent   = errors.New("vm: parent is neither verified nor last accepted")
	ErrWrongHeight     = errors.New("vm: height is not parent height + 1")
	ErrTimeBackward    = errors.New("vm: timestamp before the parent's")
	ErrTimeFuture      = errors.New("vm: timestamp too far in the future")
	ErrEpochBackward   = errors.New("vm: epoch below the parent's")
	ErrEpochMismatch   = errors.New("vm: epoch differs from the P-chain height of the block context")
	ErrMissingContext  = errors.New("vm: a block with an epoch must be verified with a block context")
	ErrUnexpectedEpoch = errors.New("vm: a block verified without context cannot carry an epoch")
	ErrWrongRoot       = errors.New("vm: state root differs from the executed state")
	ErrNotProcessing   = errors.New("vm: block is not processing")
)

var (
	_ snowman.Block               = (*Block)(nil)
	_ snowblock.WithVerifyContext = (*Block)(nil)
)

// Block is a block as the engine sees it: the wire block plus its place in
// the chain (its state layer while processing).
type Block struct {
	*block.Block
	vm *VM

	layer *state.Layer // set once verified, until decided
	// opened is set when the block puts a new membership in force (a new
	// P-chain height or generation): accepting it re-pins stale work.
	opened   bool
	accepted bool
	rejected bool
}

func (b *Block) Parent() ids.ID       { return b.Block.Parent }
func (b *Block) Height() uint64       { return b.Block.Height }
func (b *Block) Timestamp() time.Time { return time.UnixMilli(int64(b.Block.Timestamp)) }
func (b *Block) verified() bool       { return b.layer != nil }
func (b *Block) decided() bool        { return b.accepted || b.rejected }

// ShouldVerifyWithContext asks for the P-chain context exactly when the block
// claims an epoch.
func (b *Block) ShouldVerifyWithContext(context.Context) (bool, error) { return b.HasEpoch, nil }

// Verify checks a block built without a P-chain context: such a block
// carries no epoch and no transactions.
func (b *Block) Verify(ctx context.Context) error {
	b.vm.mu.Lock()
	defer b.vm.mu.Unlock()
	if b.HasEpoch {
		return ErrMissingContext
	}
	return b.vm.timedVerify(ctx, b, nil)
}

// VerifyWithContext checks the block against the P-chain height the proposer
// VM recorded for it: the epoch.
func (b *Block) VerifyWithContext(ctx context.Context, bctx *snowblock.Context) error {
	b.vm.mu.Lock()
	defer b.vm.mu.Unlock()
	if !b.HasEpoch {
		return ErrUnexpectedEpoch
	}
	return b.vm.timedVerify(ctx, b, bctx)
}

// Accept commits the block's layer in one batch.
func (b *Block) Accept(context.Context) error {
	b.vm.mu.Lock()
	defer b.vm.mu.Unlock()
	return b.vm.accept(b)
}

// Reject drops the block's layer and returns its transactions to the pool.
func (b *Block) Reject(context.Context) error {
	b.vm.mu.Lock()
	defer b.vm.mu.Unlock()
	return b.vm.reject(b)
}

func (vm *VM) timedVerify(ctx context.Context, b *Block, bctx *snowblock.Context) error {
	start := time.Now()
	err := vm.verify(ctx, b, bctx)
	vm.metrics.verifySeconds.Observe(time.Since(start).Seconds())
	if err != nil {
		vm.metrics.rejects.WithLabelValues("invalid_block").Inc()
		vm.cfg.Log.Info("block failed verification", zap.Stringer("blkID", b.ID()), zap.Uint64("height", b.Block.Height), zap.Error(err))
	}
	return err
}

// verify runs the header rules and executes the transactions on a layer
// chained on the parent's. It is pure: no clock but the skew bound, no I/O
// beyond the validator-set cache. Called with vm.mu held.
func (vm *VM) verify(ctx context.Context, b *Block, bctx *snowblock.Context) error {
	if b.decided() {
		return ErrNotProcessing
	}
	// The context is checked on every call, before the early return of an
	// already verified block: the proposer VM can wrap one inner block in
	// proposer blocks of different P-chain heights, and the verdict on each
	// must not depend on which of them this node saw first.
	if bctx != nil && b.Epoch != bctx.PChainHeight {
		return fmt.Errorf("%w: block %d, context %d", ErrEpochMismatch, b.Epoch, bctx.PChainHeight)
	}
	if b.verified() {
		return nil
	}
	parent, ok := vm.chainBlock(b.Block.Parent)
	if !ok || !vm.extendable(parent) {
		return fmt.Errorf("%w: %s", ErrUnknownParent, b.Block.Parent)
	}
	switch {
	case b.Block.Height != parent.Block.Height+1:
		return fmt.Errorf("%w: %d after %d", ErrWrongHeight, b.Block.Height, parent.Block.Height)
	case b.Block.Timestamp < parent.Block.Timestamp:
		return fmt.Errorf("%w: %d < %d", ErrTimeBackward, b.Block.Timestamp, parent.Block.Timestamp)
	case b.Block.Timestamp > uint64(vm.cfg.Clock().Add(vm.genesis.MaxTimeSkew()).UnixMilli()):
		return fmt.Errorf("%w: %d", ErrTimeFuture, b.Block.Timestamp)
	case b.HasEpoch && parent.HasEpoch && b.Epoch < parent.Epoch:
		return fmt.Errorf("%w: %d < %d", ErrEpochBackward, b.Epoch, parent.Epoch)
	}
	layer, opened, err := vm.execute(ctx, parent, b.Block)
	if err != nil {
		return err
	}
	if layer.Root() != b.StateRoot {
		vm.state.Reject(layer)
		return fmt.Errorf("%w: header %s, executed %s", ErrWrongRoot, b.StateRoot, layer.Root())
	}
	b.layer, b.opened = layer, opened
	vm.processing[b.ID()] = b
	vm.noteEpoch(b)
	return nil
}

// execute applies blk's transactions on a new layer over parent and seals
// it; opened reports whether the block put a new membership in force. The
// caller owns the returned layer.
func (vm *VM) execute(ctx context.Context, parent *Block, blk *block.Block) (layer *state.Layer, opened bool, err error) {
	c, err := vm.execContext(ctx, blk.HasEpoch, blk.Epoch, blk.Height, blk.Timestamp)
	if err != nil {
		return nil, false, err
	}
	layer, err = vm.state.NewLayer(parent.layerForChild())
	if err != nil {
		return nil, false, err
	}
	opened, err = executeBlock(layer, c, blk.Txs)
	if err == nil {
		_, err = layer.Seal()
	}
	if err != nil {
		vm.state.Reject(layer)
		return nil, false, err
	}
	return layer, opened, nil
}

// executeBlock is execute.Block that also reports whether the block put a
// new membership in force: a new P-chain height or a new generation.
func executeBlock(layer *state.Layer, c *execute.Context, blockTxs []*txs.Tx) (bool, error) {
	err := execute.Block(layer, c, blockTxs)
	return err == nil && c.MembershipChanged, err
}

// begin is execute.Begin, for a builder, with the same report.
func begin(layer *state.Layer, c *execute.Context) (bool, error) {
	err := execute.Begin(layer, c)
	return err == nil && c.MembershipChanged, err
}

// extendable reports whether a child may be built or verified on b: b is
// processing, or it is the last accepted block (an older accepted block's
// other children would conflict with the accepted chain).
func (vm *VM) extendable(b *Block) bool {
	return b.verified() || (b.accepted && b.ID() == vm.lastAccepted.ID())
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
// epoch of its timestamp, from which execute.Block opens or finds the
// membership.
func (vm *VM) execContext(ctx context.Context, hasEpoch bool, pChainHeight, height, timestamp uint64) (*execute.Context, error) {
	c := &execute.Context{
		NetworkID:  vm.cfg.NetworkID,
		ChainID:    vm.cfg.ChainID,
		Limits:     vm.genesis.TxLimits,
		Height:     height,
		Signatures: vm.sigs,
		Liveness:   vm.genesis.Liveness(),
		Round:      vm.round(timestamp),
		Restrict:   vm.memberships.restrict,

		ReplayPruneLimit: vm.genesis.replayPruneLimit(),
	}
	if hasEpoch {
		v, err := vm.epochs.Get(ctx, pChainHeight)
		switch {
		case errors.Is(err, epochs.ErrNotReady):
			// No usable validator at this height: the block carries
			// nothing and opens no membership, on every node alike.
		case err != nil:
			return nil, err
		default:
			c.Validators = v
		}
	}
	return c, nil
}

func (vm *VM) accept(b *Block) error {
	if !b.verified() || b.decided() {
		return fmt.Errorf("%w: %s", ErrNotProcessing, b.ID())
	}
	start := time.Now()
	if err := vm.state.Accept(b.layer, b.ID(), b.Bytes()); err != nil {
		return fmt.Errorf("accepting %s at height %d: %w", b.ID(), b.Block.Height, err)
	}
	vm.metrics.acceptSeconds.Observe(time.Since(start).Seconds())
	vm.metrics.height.Set(float64(b.Block.Height))
	for _, tx := range b.Txs {
		vm.metrics.acceptedTxs.WithLabelValues(tx.Kind()).Inc()
		vm.metrics.acceptedEntries.WithLabelValues(tx.Kind()).Add(float64(tx.Entries()))
	}
	b.accepted, b.layer = true, nil
	delete(vm.processing, b.ID())
	vm.lastAccepted = b
	vm.bootstrapTried = false
	included := make([]ids.ID, len(b.Txs))
	for i, tx := range b.Txs {
		included[i] = tx.ID()
	}
	vm.mempool.Remove(included...)
	if b.HasEpoch && (b.opened || vm.repinWanted || vm.inForce == nil) {
		vm.repinWanted = false
		if e, err := vm.acceptedSnapshot(context.Background()); err != nil {
			vm.cfg.Log.Warn("cannot re-pin stale transactions", zap.Error(err))
		} else if e != nil {
			vm.inForce = e
			vm.membershipWanted = false
			vm.repinStale(e)
			vm.metrics.members.Set(float64(e.Len()))
			if b.opened {
				m := e.Membership()
				vm.cfg.Log.Info("membership in force",
					zap.Uint64("pChainHeight", m.PChainHeight), zap.Uint64("round", m.Round),
					zap.Uint64("generation", m.Generation), zap.Int("members", len(m.Members)),
					zap.Bool("fallback", m.Fallback), zap.Uint64("height", b.Block.Height))
			}
		}
	}
	vm.mempool.Signal()
	vm.metrics.mempoolDepth.Set(float64(vm.mempool.Len()))
	vm.tracker.wake()
	return nil
}

func (vm *VM) reject(b *Block) error {
	if b.decided() {
		return nil
	}
	if b.layer != nil {
		vm.state.Reject(b.layer)
	}
	b.rejected, b.layer = true, nil
	delete(vm.processing, b.ID())
	accepted := vm.state.Accepted()
	for _, tx := range b.Txs {
		if _, err := accepted.Receipt(tx.ID()); err == nil {
			continue // a competing block already committed it
		}
		_ = vm.mempool.Add(tx) // back to the pool; if full, the owner re-submits
	}
	return nil
}
