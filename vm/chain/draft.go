package chain

import (
	"context"
	"fmt"
	"slices"

	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/execute"
)

// Draft is a block being built on the preferred block: its layer holds the
// parent's state plus what the builder added. It executes exactly what
// Verify will (execute.Begin, then each transaction), so the block a node
// builds and the same block verified elsewhere reach the same state root.
// A draft is used by one goroutine; Seal or Discard ends it.
type Draft struct {
	chain        *Chain
	parent       *Block
	layer        *state.Layer
	exec         *execute.Context
	height       uint64
	ts           uint64
	hasHeight    bool
	pChainHeight uint64
	txs          []*txs.Tx
	size         int
	// parentChanging: the parent puts a new membership in force and this
	// node has not accepted it yet (read under the chain's lock).
	parentChanging bool
}

// NewDraft starts a block on the preferred block, dated by this node's
// clock (never before its parent). With bctx nil it is a block without a
// P-chain context, which carries no transactions.
func (c *Chain) NewDraft(ctx context.Context, bctx *snowblock.Context) (*Draft, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	parent, ok := c.find(c.preferred)
	if !ok || !c.extendable(parent) {
		return nil, fmt.Errorf("%w: preferred %s", ErrUnknownParent, c.preferred)
	}
	d := &Draft{
		chain: c, parent: parent, height: parent.Block.Height + 1,
		ts: max(uint64(c.cfg.Clock().UnixMilli()), parent.Block.Timestamp), size: block.Size(),
		parentChanging: parent.changed && !parent.accepted,
	}
	if bctx != nil {
		if parent.HasPChainHeight && bctx.PChainHeight < parent.PChainHeight {
			return nil, fmt.Errorf("%w: context %d < parent %d", ErrPChainHeightBackward, bctx.PChainHeight, parent.PChainHeight)
		}
		d.hasHeight, d.pChainHeight = true, bctx.PChainHeight
		c.seeHeight(d.pChainHeight)
	}
	ec, err := c.execContext(ctx, d.hasHeight, d.pChainHeight, d.height, d.ts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	d.exec = ec
	if d.layer, err = c.state.NewLayer(parent.layerForChild()); err != nil {
		return nil, err
	}
	if err := execute.Begin(d.layer, ec); err != nil {
		c.state.Reject(d.layer)
		return nil, err
	}
	return d, nil
}

// ParentChanging reports whether the draft extends a block that puts a new
// membership in force and that this node has not accepted yet.
func (d *Draft) ParentChanging() bool { return d.parentChanging }

// Parent is the block the draft extends.
func (d *Draft) Parent() *Block { return d.parent }

// HasPChainHeight reports whether the draft has a P-chain context.
func (d *Draft) HasPChainHeight() bool { return d.hasHeight }

// Validators is the P-chain set of the draft's context, nil if none is
// usable there (or without a context).
func (d *Draft) Validators() *execute.ValidatorSet { return d.exec.Validators }

// Membership is the membership the draft executes under (nil without one).
func (d *Draft) Membership() *execute.Membership { return d.exec.Membership }

// Round is the draft's liveness round.
func (d *Draft) Round() uint64 { return d.exec.Round }

// Changed reports whether the draft puts a new membership in force.
func (d *Draft) Changed() bool { return d.exec.MembershipChanged }

// Moves reports whether the draft puts other members in force than the
// membership in force now: some ranges get new owners.
func (d *Draft) Moves() bool {
	if !d.exec.MembershipChanged || d.exec.Membership == nil {
		return false
	}
	now := d.chain.InForce()
	return now != nil && !slices.Equal(now.Record().Members, d.exec.Membership.Record().Members)
}

// Height is the draft's block height.
func (d *Draft) Height() uint64 { return d.height }

// Timestamp is the draft's block time, unix milliseconds.
func (d *Draft) Timestamp() uint64 { return d.ts }

// Len is the number of transactions added.
func (d *Draft) Len() int { return len(d.txs) }

// Fits reports whether tx still fits the block's limits.
func (d *Draft) Fits(tx *txs.Tx) bool {
	l := d.chain.genesis.BlockLimits
	return len(d.txs) < l.MaxTxs && d.size+block.TxOverhead+len(tx.Bytes()) <= l.MaxBlockBytes
}

// Add executes tx on the draft and keeps it, or returns execution's error
// and changes nothing.
func (d *Draft) Add(tx *txs.Tx) error {
	ch, err := execute.Tx(d.layer, d.exec, tx)
	if err != nil {
		return err
	}
	if err := d.layer.Apply(ch); err != nil {
		return err
	}
	d.txs = append(d.txs, tx)
	d.size += block.TxOverhead + len(tx.Bytes())
	return nil
}

// Seal encodes the block and makes it processing.
func (d *Draft) Seal() (*Block, error) {
	c := d.chain
	c.mu.Lock()
	defer c.mu.Unlock()
	root, err := d.layer.Seal()
	if err != nil {
		c.state.Reject(d.layer)
		return nil, err
	}
	blk, err := block.New(d.parent.ID(), d.height, d.ts, d.hasHeight, d.pChainHeight, root, d.txs, c.genesis.BlockLimits)
	if err != nil {
		c.state.Reject(d.layer)
		return nil, err
	}
	b := &Block{Block: blk, chain: c, layer: d.layer, changed: d.exec.MembershipChanged}
	c.processing[b.ID()] = b
	return b, nil
}

// Discard drops the draft.
func (d *Draft) Discard() {
	d.chain.mu.Lock()
	defer d.chain.mu.Unlock()
	d.chain.state.Reject(d.layer)
}
