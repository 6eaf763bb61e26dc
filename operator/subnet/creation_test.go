package subnet

import (
	"context"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/vms/platformvm/block"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/stretchr/testify/require"
)

// pchain is a P-chain of top blocks, the one at created holding the
// chain's CreateChainTx, every other one a transaction of its own. It
// returns the chain's ID.
func pchain(t *testing.T, top, created uint64) (*fakeNode, ids.ID) {
	t.Helper()
	n := &fakeNode{blocks: map[uint64][]byte{}}
	var chainID ids.ID
	parent := ids.Empty
	for h := uint64(1); h <= top; h++ {
		var u txs.UnsignedTx = &txs.CreateSubnetTx{Owner: &secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{{byte(h), byte(h >> 8), byte(h >> 16)}}}}
		if h == created {
			u = &txs.CreateChainTx{SubnetID: subnetID, ChainName: "schain", VMID: ids.ID{'v', 'm'}, SubnetAuth: &secp256k1fx.Input{}}
		}
		tx := &txs.Tx{Unsigned: u}
		require.NoError(t, tx.Initialize(txs.Codec))
		if h == created {
			chainID = tx.ID()
		}
		blk, err := block.NewBanffStandardBlock(time.Unix(int64(1_700_000_000+h), 0), parent, h, []*txs.Tx{tx})
		require.NoError(t, err)
		n.blocks[h], parent = blk.Bytes(), blk.ID()
	}
	return n, chainID
}

// TestChainCreatedAt: the creation height is the P-chain block holding
// the chain's CreateChainTx, found reading downward from a certificate's
// height; a hint (which anybody may claim) saves reading, a wrong one
// costs reading, never a wrong answer; below the creation there is no
// chain.
func TestChainCreatedAt(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	n, chainID := pchain(t, 900, 37)

	h, err := ChainCreatedAt(ctx, n, chainID, 900, 0)
	require.NoError(err)
	require.Equal(uint64(37), h)
	require.Positive(n.reads.Load())

	n.reads.Store(0)
	h, err = ChainCreatedAt(ctx, n, chainID, 900, 40)
	require.NoError(err)
	require.Equal(uint64(37), h)
	require.LessOrEqual(n.reads.Load(), int64(40), "a right hint reads the blocks below it only")

	for _, hint := range []uint64{30, 800, 5000} {
		h, err = ChainCreatedAt(ctx, n, chainID, 900, hint)
		require.NoError(err, "hint %d", hint)
		require.Equal(uint64(37), h, "a wrong hint (%d) costs reading, never a wrong answer", hint)
	}
	_, err = ChainCreatedAt(ctx, n, chainID, 36, 0)
	require.ErrorIs(err, ErrNoChainBelow, "a certificate at height 36 is from before the chain")
	_, err = ChainCreatedAt(ctx, n, ids.GenerateTestID(), 900, 0)
	require.ErrorIs(err, ErrNoChainBelow)
	_, err = ChainCreatedAt(ctx, n, chainID, 901, 0)
	require.ErrorContains(err, "no block at height 901", "a P-chain read that fails fails the search")
}
