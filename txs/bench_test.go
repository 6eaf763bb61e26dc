package txs_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
)

// BenchmarkParseManifest parses a group-committed write of 50 S3 objects,
// as every validator does for every block it hears of.
func BenchmarkParseManifest(b *testing.B) {
	k := newKey(b)
	var es []txs.ManifestEntry
	for i := range 50 {
		es = append(es, txs.ManifestEntry{Manifest: txs.Manifest{Bucket: "bench", Key: fmt.Sprintf("/buckets/bench/obj-%06d", i), Size: 4096, ContentHash: ids.ID{1},
			Chunks: []txs.Chunk{{Range: "bench", ID: uint64(i), Size: 4096, Hash: ids.ID{2}}}}, Attributes: bytes.Repeat([]byte{7}, 300)})
	}
	tx, err := k.Sign(&txs.ManifestTx{Header: header(k.NodeID), Entries: es})
	require.NoError(b, err)
	raw := tx.Bytes()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := txs.Parse(raw, txs.DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}
