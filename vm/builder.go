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
		return vm.seal(parent, height, ts)
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
	changed, err := executeBlock(layer, c, epoch, nil)
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
	// With only stale work, a block that puts a new membership in force is
	// what lets owners re-pin; otherwise an empty block is built for nothing.
	if len(picked) == 0 && !opening && !(stale && changed) {
		vm.state.Reject(layer)
		vm.buildStalled = true
		vm.repinWanted = vm.repinWanted || stale
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
func (vm *VM) seal(parent *Block, height, ts uint64) (snowman.Block, error) {
	layer, err := vm.state.NewLayer(parent.layerForChild())
	if err != nil {
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
// ones that fit in a block. stale reports work pinned to a membership that
// is no longer in force (its owner re-pins it once a block is accepted).
func (vm *VM) pick(layer *state.Layer, c *execute.Context) (picked []*txs.Tx, stale bool, err error) {
	for _, tx := range vm.mempool.Peek(vm.genesis.BlockLimits.MaxTxs, vm.genesis.BlockLimits.MaxBlockBytes-blockOverhead*(1+vm.genesis.BlockLimits.MaxTxs)/64) {
		ch, err := execute.Tx(layer, c, tx)
		switch {
		case err == nil:
		case errors.Is(err, execute.ErrReplay):
			continue // in a processing ancestor; keep it in case that one is rejected
		case ahead(tx, c.Epoch):
			continue // pinned to an epoch this block has not reached
		case errors.Is(err, execute.ErrWrongEpoch), errors.Is(err, execute.ErrWrongFingerprint):
			// Pinned to a membership no longer in force: its owner re-pins
			// it once a block is accepted (see repinStale).
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
	}
	return picked, stale, nil
}

// ahead reports whether tx is pinned to a P-chain height, or (a heartbeat)
// a liveness epoch, that e has not reached yet.
func ahead(tx *txs.Tx, e *execute.Epoch) bool {
	h := tx.Unsigned.Head()
	if h.Epoch != e.Height() {
		return h.Epoch > e.Height()
	}
	hb, ok := tx.Unsigned.(*txs.HeartbeatTx)
	return ok && hb.Round > e.Round()
}
