package block_test

import (
	"bytes"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/block"
)

func sampleTxs(t testing.TB) []*txs.Tx {
	keys, err := txstest.NewKeys("block", 1)
	require.NoError(t, err)
	var out []*txs.Tx
	for i := uint64(1); i <= 2; i++ {
		tx, err := keys[0].Sign(&txs.AllocateTx{
			Header:  txs.Header{NetworkID: 1, ChainID: ids.ID{1}, PChainHeight: 9, Owner: keys[0].NodeID, Nonce: i},
			Entries: []txs.AllocateEntry{{Range: "r", Count: i}},
		})
		require.NoError(t, err)
		out = append(out, tx)
	}
	return out
}

func TestRoundTripAndRules(t *testing.T) {
	require := require.New(t)
	l, tl := block.DefaultLimits(), txs.DefaultLimits()
	b, err := block.New(ids.ID{'p'}, 7, 1234, true, 9, ids.ID{'r'}, sampleTxs(t), l)
	require.NoError(err)
	p, err := block.Parse(b.Bytes(), l, tl)
	require.NoError(err)
	require.Equal(b.ID(), p.ID())
	require.Equal(b.Bytes(), p.Bytes())
	require.Equal(uint64(7), p.Height)
	require.Len(p.Txs, 2)
	require.Equal(b.Txs[1].ID(), p.Txs[1].ID())

	_, err = block.New(ids.ID{}, 1, 0, false, 0, ids.ID{}, sampleTxs(t), l)
	require.ErrorIs(err, block.ErrNoPChainHeightWithTxs)
	_, err = block.New(ids.ID{}, 1, 0, false, 3, ids.ID{}, nil, l)
	require.ErrorIs(err, block.ErrPChainHeightWithoutContext)
	_, err = block.New(ids.ID{}, 1, 0, true, 3, ids.ID{}, sampleTxs(t), block.Limits{MaxBlockBytes: 1 << 20, MaxTxs: 1})
	require.ErrorIs(err, block.ErrTooManyTxs)
	_, err = block.Parse(b.Bytes(), block.Limits{MaxBlockBytes: 10, MaxTxs: 8}, tl)
	require.ErrorIs(err, block.ErrTooLarge)
	_, err = block.Parse(append(bytes.Clone(b.Bytes()), 0), l, tl)
	require.ErrorIs(err, block.ErrTrailingBytes)
	_, err = block.Parse(b.Bytes()[:len(b.Bytes())-1], l, tl)
	require.ErrorIs(err, txs.ErrTruncated)
	bad := bytes.Clone(b.Bytes())
	bad[1] = 9
	_, err = block.Parse(bad, l, tl)
	require.ErrorIs(err, block.ErrUnknownVersion)
}

func FuzzParse(f *testing.F) {
	l, tl := block.DefaultLimits(), txs.DefaultLimits()
	b, err := block.New(ids.ID{'p'}, 7, 1234, true, 9, ids.ID{'r'}, sampleTxs(f), l)
	require.NoError(f, err)
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		blk, err := block.Parse(in, l, tl)
		if err != nil {
			return
		}
		again, err := block.New(blk.Parent, blk.Height, blk.Timestamp, blk.HasPChainHeight, blk.PChainHeight, blk.StateRoot, blk.Txs, l)
		require.NoError(t, err)
		require.Equal(t, in, again.Bytes(), "accepted block bytes are canonical")
		links, err := block.ReadLinks(in)
		require.NoError(t, err, "a client reads the links of every valid block")
		require.Equal(t, blk.ID(), links.ID)
		require.Equal(t, blk.Parent, links.Parent)
		require.Len(t, links.TxIDs, len(blk.Txs))
	})
}

// TestSizeIsTheEncodedSize: builders size blocks with Size before encoding
// them, so it must agree with the encoding exactly.
func TestSizeIsTheEncodedSize(t *testing.T) {
	l := block.DefaultLimits()
	all := sampleTxs(t)
	for n := 0; n <= len(all); n++ {
		b, err := block.New(ids.ID{'p'}, 7, 1234, n > 0, 9*uint64(min(n, 1)), ids.ID{'r'}, all[:n], l)
		require.NoError(t, err)
		sizes := make([]int, n)
		for i, tx := range all[:n] {
			sizes[i] = len(tx.Bytes())
		}
		require.Len(t, b.Bytes(), block.Size(sizes...))
	}
}

func TestLinksAgreeWithParse(t *testing.T) {
	b, err := block.New(ids.ID{'p'}, 7, 1234, true, 9, ids.ID{'r'}, sampleTxs(t), block.DefaultLimits())
	require.NoError(t, err)
	l, err := block.ReadLinks(b.Bytes())
	require.NoError(t, err)
	require.Equal(t, b.ID(), l.ID)
	require.Equal(t, b.Parent, l.Parent)
	require.Equal(t, b.Height, l.Height)
	require.Equal(t, b.StateRoot, l.StateRoot)
	require.Len(t, l.TxIDs, len(b.Txs))
	for i, tx := range b.Txs {
		require.Equal(t, tx.ID(), l.TxIDs[i])
	}
	_, err = block.ReadLinks(append(b.Bytes(), 0))
	require.ErrorIs(t, err, block.ErrTrailingBytes)
	_, err = block.ReadLinks(b.Bytes()[:40])
	require.Error(t, err)
}
