package vm_test

import (
	"context"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/execute"
)

// TestVerifyRejectsEachInvalidBlock crafts one block per rule and checks
// every VM refuses it with that rule's error.
func TestVerifyRejectsEachInvalidBlock(t *testing.T) {
	ctx := context.Background()
	nw := newNet(t, 2)
	nw.ready(10)
	v := nw.vms[1]
	lastID, err := v.LastAccepted(ctx)
	require.NoError(t, err)
	lb, err := v.GetBlock(ctx, lastID)
	require.NoError(t, err)
	last := lb.(*chain.Block)

	// A valid block to learn the root a correct block would carry.
	mine := nw.rangeOf(0, "verify")
	tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 1}})
	require.NoError(t, err)
	good, err := nw.vms[0].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(t, err)
	goodRoot := good.(*chain.Block).StateRoot

	// A tx signed by a node for a range it does not own.
	theirs := nw.rangeOf(1, "verify")
	forged, err := nw.keys[0].Sign(&txs.AllocateTx{Header: txs.Header{
		NetworkID: 5, ChainID: chainID, PChainHeight: 10, Fingerprint: tx.Unsigned.Head().Fingerprint, Owner: nw.keys[0].NodeID, Nonce: 99,
	}, Entries: []txs.AllocateEntry{{Range: theirs, Count: 1}}})
	require.NoError(t, err)

	ts := last.Block.Timestamp
	h := last.Block.Height + 1
	l := block.DefaultLimits()
	tests := []struct {
		name string
		blk  func() (*block.Block, error)
		bctx *snowblock.Context
		err  error
	}{
		{"unknown parent", func() (*block.Block, error) {
			return block.New(ids.ID{'?'}, h, ts, true, 10, goodRoot, []*txs.Tx{tx}, l)
		}, &snowblock.Context{PChainHeight: 10}, chain.ErrUnknownParent},
		{"wrong height", func() (*block.Block, error) { return block.New(lastID, h+1, ts, true, 10, goodRoot, []*txs.Tx{tx}, l) }, &snowblock.Context{PChainHeight: 10}, chain.ErrWrongHeight},
		{"time before parent", func() (*block.Block, error) { return block.New(lastID, h, ts-1, true, 10, goodRoot, []*txs.Tx{tx}, l) }, &snowblock.Context{PChainHeight: 10}, chain.ErrTimeBackward},
		{"time too far ahead", func() (*block.Block, error) {
			return block.New(lastID, h, ts+3_600_000, true, 10, goodRoot, []*txs.Tx{tx}, l)
		}, &snowblock.Context{PChainHeight: 10}, chain.ErrTimeFuture},
		{"epoch below parent", func() (*block.Block, error) { return block.New(lastID, h, ts, true, 9, goodRoot, nil, l) }, &snowblock.Context{PChainHeight: 9}, chain.ErrPChainHeightBackward},
		{"epoch not the context's", func() (*block.Block, error) { return block.New(lastID, h, ts, true, 10, goodRoot, []*txs.Tx{tx}, l) }, &snowblock.Context{PChainHeight: 11}, chain.ErrPChainHeightMismatch},
		{"epoch without context", func() (*block.Block, error) { return block.New(lastID, h, ts, true, 10, goodRoot, []*txs.Tx{tx}, l) }, nil, chain.ErrMissingContext},
		{"context without epoch", func() (*block.Block, error) { return block.New(lastID, h, ts, false, 0, goodRoot, nil, l) }, &snowblock.Context{PChainHeight: 10}, chain.ErrUnexpectedPChainHeight},
		{"wrong state root", func() (*block.Block, error) { return block.New(lastID, h, ts, true, 10, ids.ID{'r'}, []*txs.Tx{tx}, l) }, &snowblock.Context{PChainHeight: 10}, chain.ErrWrongRoot},
		{"tx from a non-owner", func() (*block.Block, error) {
			return block.New(lastID, h, ts, true, 10, goodRoot, []*txs.Tx{forged}, l)
		}, &snowblock.Context{PChainHeight: 10}, execute.ErrNotOwner},
		{"tx twice", func() (*block.Block, error) {
			return block.New(lastID, h, ts, true, 10, goodRoot, []*txs.Tx{tx, tx}, l)
		}, &snowblock.Context{PChainHeight: 10}, execute.ErrReplay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			blk, err := tt.blk()
			require.NoError(t, err)
			parsed, err := v.ParseBlock(ctx, blk.Bytes())
			require.NoError(t, err)
			if tt.bctx == nil {
				err = parsed.Verify(ctx)
			} else {
				err = parsed.(snowblock.WithVerifyContext).VerifyWithContext(ctx, tt.bctx)
			}
			require.ErrorIs(t, err, tt.err)
		})
	}
	// The good block still verifies after all that.
	parsed, err := v.ParseBlock(ctx, good.Bytes())
	require.NoError(t, err)
	require.NoError(t, parsed.(snowblock.WithVerifyContext).VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 10}))
}
