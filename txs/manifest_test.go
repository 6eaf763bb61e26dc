package txs_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
)

func sampleVersioned(owner ids.NodeID) *txs.ManifestTx {
	return &txs.ManifestTx{Header: header(owner), Entries: []txs.ManifestEntry{
		{Manifest: txs.Manifest{Bucket: "photos", Key: "2026/cat.jpg", Size: 30, ContentHash: ids.ID{1}, Chunks: []txs.Chunk{
			{Range: "photos", ID: 1, Size: 10, Hash: ids.ID{2}},
			{Range: "photos/band-1", ID: 1 << 40, Size: 20, Hash: ids.ID{3}},
		}}, Attributes: []byte("filer entry"), Condition: txs.Condition{Kind: txs.IfAbsent}},
		{Manifest: txs.Manifest{Bucket: "photos", Key: "old.jpg", Deleted: true}, Condition: txs.Condition{Kind: txs.IfVersion, Version: 7 << 24}},
		{Manifest: txs.Manifest{Bucket: "photos", Key: "empty"}, Condition: txs.Condition{Kind: txs.IfContentHash, ContentHash: ids.ID{9}}},
		{Manifest: txs.Manifest{Bucket: "photos", Key: "empty"}, Adopt: true},
		{Manifest: txs.Manifest{Bucket: "photos", Key: "moved"}, Adopt: true, Condition: txs.Condition{Kind: txs.IfVersion, Version: 1}},
	}}
}

func sampleReclaim(owner ids.NodeID) *txs.ReclaimTx {
	return &txs.ReclaimTx{Header: header(owner), Entries: []txs.ChunkRef{{Range: "photos", ID: 1}, {Range: "photos/band-1", ID: 1 << 40}}}
}

func TestManifestKinds(t *testing.T) {
	k := newKey(t)
	tx, err := k.Sign(sampleVersioned(k.NodeID))
	require.NoError(t, err)
	require.Equal(t, "manifest", tx.Kind())
	require.Equal(t, []string{"photos", "photos", "photos", "photos", "photos"}, sampleVersioned(k.NodeID).Ranges())
	rc, err := k.Sign(sampleReclaim(k.NodeID))
	require.NoError(t, err)
	require.Equal(t, "reclaim", rc.Kind())
	require.Equal(t, []string{"photos", "photos"}, sampleReclaim(k.NodeID).Ranges(), "a band's chunk is reclaimed by its bucket's owner")
}

func TestManifestEntryRules(t *testing.T) {
	k := newKey(t)
	l := txs.DefaultLimits()
	put := func(e ...txs.ManifestEntry) txs.Unsigned {
		return &txs.ManifestTx{Header: header(k.NodeID), Entries: e}
	}
	obj := txs.Manifest{Bucket: "b", Key: "k"}
	tests := []struct {
		name string
		u    txs.Unsigned
		err  error
	}{
		{"attributes too large", put(txs.ManifestEntry{Manifest: obj, Attributes: make([]byte, l.MaxAttributeBytes+1)}), txs.ErrAttributesTooLarge},
		{"tombstone with attributes", put(txs.ManifestEntry{Manifest: txs.Manifest{Bucket: "b", Key: "k", Deleted: true}, Attributes: []byte{1}}), txs.ErrBadTombstone},
		{"unknown condition", put(txs.ManifestEntry{Manifest: obj, Condition: txs.Condition{Kind: 9}}), txs.ErrBadCondition},
		{"version zero", put(txs.ManifestEntry{Manifest: obj, Condition: txs.Condition{Kind: txs.IfVersion}}), txs.ErrBadCondition},
		{"absent with a version", put(txs.ManifestEntry{Manifest: obj, Condition: txs.Condition{Kind: txs.IfAbsent, Version: 3}}), txs.ErrBadCondition},
		{"hash with a version", put(txs.ManifestEntry{Manifest: obj, Condition: txs.Condition{Kind: txs.IfContentHash, Version: 3}}), txs.ErrBadCondition},
		{"version with a hash", put(txs.ManifestEntry{Manifest: obj, Condition: txs.Condition{Kind: txs.IfVersion, Version: 3, ContentHash: ids.ID{1}}}), txs.ErrBadCondition},
		{"manifest rules still apply", put(txs.ManifestEntry{Manifest: txs.Manifest{Bucket: "b", Key: "k", Size: 5}}), txs.ErrSizeMismatch},
		{"reclaim duplicate", &txs.ReclaimTx{Header: header(k.NodeID), Entries: []txs.ChunkRef{{Range: "b", ID: 1}, {Range: "b", ID: 1}}}, txs.ErrDuplicateChunk},
		{"reclaim bad range", &txs.ReclaimTx{Header: header(k.NodeID), Entries: []txs.ChunkRef{{Range: "b//c", ID: 1}}}, txs.ErrBadRange},
		{"reclaim nothing", &txs.ReclaimTx{Header: header(k.NodeID)}, txs.ErrNoEntries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := txs.Sign(tt.u, l, k.Signer(networkID, chainID))
			require.ErrorIs(t, err, tt.err)
		})
	}
	// Two writes of one object in one transaction are two versions, not a
	// duplicate.
	_, err := txs.Sign(put(txs.ManifestEntry{Manifest: obj}, txs.ManifestEntry{Manifest: obj}), l, k.Signer(networkID, chainID))
	require.NoError(t, err)
}

func TestManifestEntryParseBounds(t *testing.T) {
	k := newKey(t)
	tx, err := k.Sign(sampleVersioned(k.NodeID))
	require.NoError(t, err)
	// The attributes' length is checked before they are read.
	small := txs.DefaultLimits()
	small.MaxAttributeBytes = len("filer entry") - 1
	_, err = txs.Parse(tx.Bytes(), small)
	require.ErrorIs(t, err, txs.ErrAttributesTooLarge)

	// A condition kind beyond the known ones is refused, not skipped.
	b := bytes.Clone(tx.Bytes())
	at := bytes.Index(b, []byte("filer entry")) - 4 - 1
	require.Equal(t, byte(txs.IfAbsent), b[at])
	b[at] = 7
	_, err = txs.Parse(b, txs.DefaultLimits())
	require.ErrorIs(t, err, txs.ErrBadCondition)
}

func TestConditionJSON(t *testing.T) {
	for _, c := range []txs.Condition{
		{}, {Kind: txs.IfAbsent}, {Kind: txs.IfVersion, Version: 42}, {Kind: txs.IfContentHash, ContentHash: ids.ID{7}},
	} {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		var back txs.Condition
		require.NoError(t, json.Unmarshal(b, &back), string(b))
		require.Equal(t, c, back, string(b))
	}
	var c txs.Condition
	require.ErrorIs(t, json.Unmarshal([]byte(`{"kind":"sometimes"}`), &c), txs.ErrBadCondition)
	require.NoError(t, json.Unmarshal([]byte(`{}`), &c))
	require.Equal(t, txs.IfAny, c.Kind)
}

func TestManifestEntryEncodedLen(t *testing.T) {
	k := newKey(t)
	u := sampleVersioned(k.NodeID)
	tx, err := k.Sign(u)
	require.NoError(t, err)
	n := txs.Overhead
	for i := range u.Entries {
		n += u.Entries[i].EncodedLen()
	}
	require.Equal(t, len(tx.Bytes()), n)
}
