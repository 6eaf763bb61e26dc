package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/execute"
)

// BuildBlock builds without a P-chain context. Such a block (the first after
// genesis) carries no transactions; it is built only when work is pending or
// no epoch is known yet, so that the chain reaches the heights where the
// proposer VM supplies contexts.
func (vm *VM) BuildBlock(ctx context.Context) (snowman.Block, error) {
	return vm.build(ctx, nil)
}

// maxContextlessOpening bounds the empty blocks built without a P-chain
// context while the chain opens its first epoch.
const maxContextlessOpening = 4

// BuildBlockWithContext packs pending transactions of the context's epoch.
func (vm *VM) BuildBlockWithContext(ctx context.Context, bctx *snowblock.Context) (snowman.Block, error) {
	return vm.build(ctx, bctx)
}

func (vm *VM) build(ctx context.Context, bctx *snowblock.Context) (snowman.Block, error) {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	parent, ok := vm.chainBlock(vm.preferred)
	if !ok || !vm.extendable(parent) {
		return nil, fmt.Errorf("%w: preferred %s", ErrUnknownParent, vm.preferred)
	}
	// Until a block carries an epoch, nodes cannot pin transactions: the
	// chain opens its first epoch with (at most two) empty blocks.
	opening := !parent.HasEpoch && vm.openingWanted
	if vm.mempool.Len() == 0 && !opening {
		return nil, ErrNoWork
	}
	ts := max(uint64(vm.cfg.Clock().UnixMilli()), parent.Block.Timestamp)
	height := parent.Block.Height + 1
	if bctx == nil {
		// Before the proposer VM forks in (one or two blocks after genesis,
		// depending on the genesis time) blocks come without a context;
		// they open the chain and carry nothing. A bound keeps a chain
		// whose proposer VM never activates from building empty blocks
		// forever.
		if !opening || parent.Block.Height >= maxContextlessOpening {
			vm.bootstrapTried = true
			return nil, fmt.Errorf("%w: a block without a P-chain context carries no transactions", ErrNoWork)
		}
		return vm.seal(ctx, parent, height, ts)
	}
	epoch := bctx.PChainHeight
	if parent.HasEpoch && epoch < parent.Epoch {
		return nil, fmt.Errorf("%w: context %d < parent %d", ErrEpochBackward, epoch, parent.Epoch)
	}
	vm.seeEpoch(epoch)
	c, err := vm.execContext(ctx, true, epoch, height, ts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	if c.Validators == nil && !opening {
		return nil, fmt.Errorf("%w: no usable validator at P-chain height %d", ErrNotReady, epoch)
	}
	layer, err := vm.state.NewLayer(parent.layerForChild())
	if err != nil {
		return nil, err
	}
	// changed: this block puts a new membership in force, so work pinned to
	// the old one becomes re-pinnable once it is accepted.
	changed, err := begin(layer, c)
	if err != nil {
		vm.state.Reject(layer)
		return nil, err
	}
	var (
		picked []*txs.Tx
		stale  bool
	)
	if c.Epoch != nil {
		picked, stale, err = vm.pick(layer, c)
		if err != nil {
			vm.state.Reject(layer)
			return nil, err
		}
	}
	// With only stale work, or a range waiting to move to its new owner
	// (signingEpoch), a block that puts a new membership in force is what
	// lets owners (re-)sign; otherwise an empty block is built for nothing.
	if len(picked) == 0 && !opening && !((stale || vm.membershipWanted) && changed) {
		vm.state.Reject(layer)
		vm.buildStalled = true
		vm.repinWanted = vm.repinWanted || stale
		if !changed {
			vm.membershipWanted = false // nothing to open: the membership in force stays
		}
		return nil, ErrNoWork
	}
	vm.buildStalled = false
	root, err := layer.Seal()
	if err != nil {
		vm.state.Reject(layer)
		return nil, err
	}
	blk, err := block.New(parent.ID(), height, ts, true, epoch, root, picked, vm.genesis.BlockLimits)
	if err != nil {
		vm.state.Reject(layer)
		return nil, err
	}
	b := &Block{Block: blk, vm: vm, layer: layer, opened: changed}
	vm.processing[b.ID()] = b
	if vm.mempool.Len() > len(picked) {
		vm.mempool.Signal() // more than one block's worth is pending
	}
	return b, nil
}

// seal builds an epoch-less, transaction-less block on parent.
func (vm *VM) seal(ctx context.Context, parent *Block, height, ts uint64) (snowman.Block, error) {
	c, err := vm.execContext(ctx, false, 0, height, ts)
	if err != nil {
		return nil, err
	}
	layer, err := vm.state.NewLayer(parent.layerForChild())
	if err != nil {
		return nil, err
	}
	if _, err := begin(layer, c); err != nil {
		vm.state.Reject(layer)
		return nil, err
	}
	root, err := layer.Seal()
	if err != nil {
		vm.state.Reject(layer)
		return nil, err
	}
	blk, err := block.New(parent.ID(), height, ts, false, 0, root, nil, vm.genesis.BlockLimits)
	if err != nil {
		vm.state.Reject(layer)
		return nil, err
	}
	b := &Block{Block: blk, vm: vm, layer: layer}
	vm.processing[b.ID()] = b
	return b, nil
}

// pick executes pending transactions on layer in pool order and returns the
// ones that fit in a block, sized by vm/block's format as it goes: a
// transaction that does not fit is skipped, not the whole build, and one
// that cannot go into this block yet does not keep the ones behind it out.
// stale reports work that can never be included under this block's
// membership (its owner re-pins it once a block is accepted).
func (vm *VM) pick(layer *state.Layer, c *execute.Context) (picked []*txs.Tx, stale bool, err error) {
	limits := vm.genesis.BlockLimits
	size := block.Size()
	for _, tx := range vm.mempool.All() {
		if len(picked) == limits.MaxTxs {
			break
		}
		if grown := size + block.TxOverhead + len(tx.Bytes()); grown > limits.MaxBlockBytes {
			continue // a smaller transaction behind it may still fit
		}
		ch, err := execute.Tx(layer, c, tx)
		switch {
		case err == nil:
		case errors.Is(err, execute.ErrReplay):
			continue // in a processing ancestor; keep it in case that one is rejected
		case ahead(tx, c):
			continue // pinned to a P-chain height or liveness epoch this block has not reached
		case errors.Is(err, execute.ErrWrongEpoch), errors.Is(err, execute.ErrWrongFingerprint),
			errors.Is(err, execute.ErrExpired):
			// Pinned to a membership or epoch no longer in force: its
			// owner re-pins it once a block is accepted (see repinStale).
			stale = true
			continue
		default:
			vm.mempool.Remove(tx.ID()) // evict only the offending transaction
			vm.tracker.reject(tx.ID(), "rejected: "+err.Error())
			vm.metrics.rejects.WithLabelValues(reasonOf(err)).Inc()
			continue
		}
		if err := layer.Apply(ch); err != nil {
			return nil, false, err
		}
		picked = append(picked, tx)
		size += block.TxOverhead + len(tx.Bytes())
	}
	return picked, stale, nil
}

// ahead reports whether tx is pinned to a P-chain height, or signed in a
// liveness epoch, that a block of context c has not reached yet.
func ahead(tx *txs.Tx, c *execute.Context) bool {
	h := tx.Unsigned.Head()
	if h.Epoch != c.Epoch.Height() {
		return h.Epoch > c.Epoch.Height()
	}
	if tx.IsHeartbeat() {
		return h.Round > c.Round
	}
	return h.Round > c.Round+1
}
