package state

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
)

// The object and chunk records decode only what their encoders write, and
// decode it back to the same value and bytes.
func FuzzObjectRecord(f *testing.F) {
	l := txs.DefaultLimits()
	for _, o := range []*Object{
		{Manifest: txs.Manifest{Bucket: "b", Key: "k", Size: 3, Chunks: []txs.Chunk{{Range: "b/x", ID: 9, Size: 3, Hash: ids.ID{1}}}}, Attributes: []byte("a"), Version: 1 << 30, Height: 64},
		{Manifest: txs.Manifest{Bucket: "b", Key: "gone", Deleted: true}, Version: 2},
	} {
		f.Add(encodeObject(o))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeObject(b, l)
		if err != nil {
			return
		}
		require.Equal(t, b, encodeObject(o))
	})
}

func FuzzChunkRecord(f *testing.F) {
	for _, c := range []Chunk{{Status: ChunkLive, Bucket: "b", Key: "k"}, {Status: ChunkReleased, Height: 9}, {Status: ChunkReclaimed, Height: 1}} {
		f.Add(encodeChunk(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeChunk(b)
		if err != nil {
			return
		}
		require.Equal(t, b, encodeChunk(c))
	})
}

func FuzzReceiptRecord(f *testing.F) {
	for _, r := range []*Receipt{
		{TxID: ids.ID{1}, Height: 3, Kind: "manifest", Entries: []ReceiptEntry{{Bucket: "b", Key: "k", Version: 5, Refused: "precondition_failed", Current: 4}}},
		{TxID: ids.ID{2}, Height: 3, Kind: "allocate", Entries: []ReceiptEntry{{Range: "r", Base: 1, Count: 2}}},
		{TxID: ids.ID{3}, Height: 4, Kind: "lease", Entries: []ReceiptEntry{{Range: "r", Lease: LeaseGranted, Holder: "h", Token: 2, ExpiresMs: 9}}},
	} {
		b, err := encodeReceipt(r)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeReceipt(b)
		if err != nil {
			return
		}
		again, err := encodeReceipt(r)
		require.NoError(t, err)
		require.Equal(t, b, again)
	})
}
