package txs_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
)

var (
	chainID   = ids.ID{'c', 'h', 'a', 'i', 'n'}
	networkID = uint32(12345)
)

func header(owner ids.NodeID) txs.Header {
	return txs.Header{NetworkID: networkID, ChainID: chainID, PChainHeight: 77, Fingerprint: ids.ID{'f', 'p'}, Owner: owner, Round: 1_234_567}
}

func sampleAllocate(owner ids.NodeID) *txs.AllocateTx {
	return &txs.AllocateTx{Header: header(owner), Entries: []txs.AllocateEntry{
		{Range: "photos", Count: 10},
		{Range: "photos/band-1", Count: 1, Floor: 1 << 40},
		{Range: "photos", Count: 3},
	}}
}

func sampleManifest(owner ids.NodeID) *txs.PutManifestTx {
	return &txs.PutManifestTx{Header: header(owner), Entries: []txs.Manifest{
		{Bucket: "photos", Key: "2026/cat.jpg", Size: 30, ContentHash: ids.ID{1}, Chunks: []txs.Chunk{
			{Range: "photos", ID: 1, Size: 10, Hash: ids.ID{2}},
			{Range: "photos/band-1", ID: 1 << 40, Size: 20, Hash: ids.ID{3}},
		}},
		{Bucket: "photos", Key: "old.jpg", Deleted: true},
		{Bucket: "photos", Key: "empty"},
	}}
}

func sampleHeartbeat(owner ids.NodeID) *txs.HeartbeatTx {
	h := header(owner)
	h.Fingerprint = ids.Empty
	return &txs.HeartbeatTx{Header: h}
}

func sampleLease(owner ids.NodeID) *txs.LeaseTx {
	return &txs.LeaseTx{Header: header(owner), Entries: []txs.LeaseEntry{
		{Op: txs.LeaseAcquire, Range: "cluster/lock/admin", Holder: "10.0.0.7:9333", TTLMs: 10_000},
		{Op: txs.LeaseRenew, Range: "cluster/vacuum/7", Holder: "m1", Token: 41, TTLMs: txs.MaxLeaseTTLMs},
		{Op: txs.LeaseRelease, Range: "cluster/vacuum/8", Holder: "m2", Token: 1 << 60},
	}}
}

func newKey(t testing.TB) *txstest.Key {
	keys, err := txstest.NewKeys(t.Name(), 2)
	require.NoError(t, err)
	return keys[0]
}

func TestRoundTrip(t *testing.T) {
	k := newKey(t)
	bound := sampleAllocate(k.NodeID)
	bound.BlockHeight = 1_000_003
	for _, u := range []txs.Unsigned{sampleAllocate(k.NodeID), sampleManifest(k.NodeID), sampleHeartbeat(k.NodeID), bound, sampleVersioned(k.NodeID), sampleReclaim(k.NodeID), sampleLease(k.NodeID)} {
		require := require.New(t)
		tx, err := k.Sign(u)
		require.NoError(err)
		parsed, err := txs.Parse(tx.Bytes(), txs.DefaultLimits())
		require.NoError(err)
		require.Equal(tx.Bytes(), parsed.Bytes())
		require.Equal(tx.ID(), parsed.ID())
		require.Equal(tx.SigningHash(), parsed.SigningHash())
		require.Equal(u, parsed.Unsigned)
		_, hb := u.(*txs.HeartbeatTx)
		require.Equal(hb, parsed.IsHeartbeat())
		require.Equal(tx.Signature, parsed.Signature)
		require.NoError(parsed.VerifySignature(k.PublicKey()))
	}
}

func TestSignatureBinding(t *testing.T) {
	require := require.New(t)
	keys, err := txstest.NewKeys(t.Name(), 2)
	require.NoError(err)
	owner, other := keys[0], keys[1]
	tx, err := owner.Sign(sampleAllocate(owner.NodeID))
	require.NoError(err)

	require.ErrorIs(tx.VerifySignature(other.PublicKey()), txs.ErrBadSignature)
	require.ErrorIs(tx.VerifySignature(nil), txs.ErrBadSignature)

	// Any change to the signed part (here the count of entry 0, at the end
	// of its range string) keeps the bytes parseable but breaks the signature.
	b := bytes.Clone(tx.Bytes())
	i := bytes.Index(b, []byte("photos")) + len("photos") + 7
	b[i]++
	tampered, err := txs.Parse(b, txs.DefaultLimits())
	require.NoError(err)
	require.NotEqual(tx.ID(), tampered.ID())
	require.ErrorIs(tampered.VerifySignature(owner.PublicKey()), txs.ErrBadSignature)

	// Nor can a transaction be moved to another block height (the header's
	// BlockHeight, bytes 115..123) under its signature.
	rebound := bytes.Clone(tx.Bytes())
	rebound[122] = 7
	moved, err := txs.Parse(rebound, txs.DefaultLimits())
	require.NoError(err)
	require.Equal(uint64(7), moved.Unsigned.Head().BlockHeight)
	require.ErrorIs(moved.VerifySignature(owner.PublicKey()), txs.ErrBadSignature)

	// A signature from the same key over another chain does not carry over.
	u := sampleAllocate(owner.NodeID)
	u.ChainID = ids.ID{'o', 't', 'h', 'e', 'r'}
	elsewhere, err := owner.Sign(u)
	require.NoError(err)
	resigned := bytes.Clone(tx.Bytes())
	copy(resigned[len(resigned)-len(elsewhere.Signature):], elsewhere.Signature[:])
	replayed, err := txs.Parse(resigned, txs.DefaultLimits())
	require.NoError(err)
	require.ErrorIs(replayed.VerifySignature(owner.PublicKey()), txs.ErrBadSignature)

	// Garbage in the signature field is a named error, not a panic.
	junk := bytes.Clone(tx.Bytes())
	for j := len(junk) - 96; j < len(junk); j++ {
		junk[j] = 0xff
	}
	bad, err := txs.Parse(junk, txs.DefaultLimits())
	require.NoError(err)
	require.ErrorIs(bad.VerifySignature(owner.PublicKey()), txs.ErrBadSignature)
}

func TestStatelessRules(t *testing.T) {
	k := newKey(t)
	l := txs.DefaultLimits()
	long := func(n int) string { return strings.Repeat("r", n) }
	alloc := func(e ...txs.AllocateEntry) txs.Unsigned {
		return &txs.AllocateTx{Header: header(k.NodeID), Entries: e}
	}
	put := func(m ...txs.Manifest) txs.Unsigned {
		return &txs.PutManifestTx{Header: header(k.NodeID), Entries: m}
	}
	many := make([]txs.AllocateEntry, l.MaxEntries+1)
	for i := range many {
		many[i] = txs.AllocateEntry{Range: "r", Count: 1}
	}
	chunks := make([]txs.Chunk, l.MaxChunks+1)
	for i := range chunks {
		chunks[i] = txs.Chunk{Range: "b", ID: uint64(i), Size: 1}
	}
	tests := []struct {
		name string
		u    txs.Unsigned
		err  error
	}{
		{"no entries", alloc(), txs.ErrNoEntries},
		{"too many entries", alloc(many...), txs.ErrTooManyEntries},
		{"empty range", alloc(txs.AllocateEntry{Range: "", Count: 1}), txs.ErrBadRange},
		{"range too long", alloc(txs.AllocateEntry{Range: long(l.MaxRangeLen + 1), Count: 1}), txs.ErrBadRange},
		{"range with space", alloc(txs.AllocateEntry{Range: "a b", Count: 1}), txs.ErrBadRange},
		{"range empty segment", alloc(txs.AllocateEntry{Range: "a//b", Count: 1}), txs.ErrBadRange},
		{"range trailing slash", alloc(txs.AllocateEntry{Range: "a/", Count: 1}), txs.ErrBadRange},
		{"range leading slash", alloc(txs.AllocateEntry{Range: "/a", Count: 1}), txs.ErrBadRange},
		{"zero count", alloc(txs.AllocateEntry{Range: "r"}), txs.ErrZeroCount},
		{"count over limit", alloc(txs.AllocateEntry{Range: "r", Count: l.MaxCount + 1}), txs.ErrCountTooLarge},
		{"bucket with slash", put(txs.Manifest{Bucket: "a/b", Key: "k"}), txs.ErrBadBucket},
		{"empty key", put(txs.Manifest{Bucket: "b"}), txs.ErrBadKey},
		{"key too long", put(txs.Manifest{Bucket: "b", Key: long(l.MaxKeyLen + 1)}), txs.ErrBadKey},
		{"key not utf8", put(txs.Manifest{Bucket: "b", Key: "\xff"}), txs.ErrBadKey},
		{"too many chunks", put(txs.Manifest{Bucket: "b", Key: "k", Size: uint64(len(chunks)), Chunks: chunks}), txs.ErrTooManyChunks},
		{"chunk outside bucket", put(txs.Manifest{Bucket: "b", Key: "k", Size: 1, Chunks: []txs.Chunk{{Range: "bb", ID: 1, Size: 1}}}), txs.ErrChunkOutsideBucket},
		{"zero chunk", put(txs.Manifest{Bucket: "b", Key: "k", Chunks: []txs.Chunk{{Range: "b", ID: 1}}}), txs.ErrZeroChunkSize},
		{"duplicate chunk", put(txs.Manifest{Bucket: "b", Key: "k", Size: 2, Chunks: []txs.Chunk{{Range: "b", ID: 1, Size: 1}, {Range: "b", ID: 1, Size: 1}}}), txs.ErrDuplicateChunk},
		{"size mismatch", put(txs.Manifest{Bucket: "b", Key: "k", Size: 5, Chunks: []txs.Chunk{{Range: "b", ID: 1, Size: 1}}}), txs.ErrSizeMismatch},
		{"size overflow", put(txs.Manifest{Bucket: "b", Key: "k", Size: 1, Chunks: []txs.Chunk{{Range: "b", ID: 1, Size: 1 << 63}, {Range: "b", ID: 2, Size: 1 << 63}}}), txs.ErrSizeMismatch},
		{"tombstone with size", put(txs.Manifest{Bucket: "b", Key: "k", Size: 1, Deleted: true}), txs.ErrBadTombstone},
		{"duplicate object", put(txs.Manifest{Bucket: "b", Key: "k"}, txs.Manifest{Bucket: "b", Key: "k"}), txs.ErrDuplicateEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := txs.Sign(tt.u, l, k.Signer(networkID, chainID))
			require.ErrorIs(t, err, tt.err)
		})
	}
}

func TestParseRejectsMalformedBytes(t *testing.T) {
	k := newKey(t)
	tx, err := k.Sign(sampleManifest(k.NodeID))
	require.NoError(t, err)
	good := tx.Bytes()
	l := txs.DefaultLimits()
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	// Offsets into the header: version 0..2, kind 2, entry count 123..127.
	tests := []struct {
		name string
		b    []byte
		l    txs.Limits
		err  error
	}{
		{"empty", nil, l, txs.ErrTruncated},
		{"truncated header", good[:50], l, txs.ErrTruncated},
		{"truncated signature", good[:len(good)-1], l, txs.ErrTruncated},
		{"trailing byte", append(bytes.Clone(good), 0), l, txs.ErrTrailingBytes},
		{"version", with(func(b []byte) []byte { b[1] = 1; return b }), l, txs.ErrUnknownVersion},
		{"kind", with(func(b []byte) []byte { b[2] = 9; return b }), l, txs.ErrUnknownKind},
		{"zero entries", with(func(b []byte) []byte { b[126] = 0; return b }), l, txs.ErrNoEntries},
		{"entry count beyond data", with(func(b []byte) []byte { b[126] = 200; return b }), l, txs.ErrTruncated},
		{"entry count over limit", with(func(b []byte) []byte { b[124] = 1; return b }), l, txs.ErrTooManyEntries},
		{"tx bytes over limit", good, txs.Limits{MaxTxBytes: len(good) - 1, MaxEntries: 8, MaxRangeLen: 8, MaxKeyLen: 32, MaxChunks: 8, MaxCount: 8}, txs.ErrTooLarge},
		{"chunk count over limit", good, txs.Limits{MaxTxBytes: 1 << 20, MaxEntries: 8, MaxRangeLen: 64, MaxKeyLen: 64, MaxChunks: 1, MaxCount: 8}, txs.ErrTooManyChunks},
		{"deleted flag not a bool", with(func(b []byte) []byte {
			i := bytes.Index(b, []byte("old.jpg")) + len("old.jpg") + 8 + 32
			b[i] = 2
			return b
		}), l, txs.ErrBadBool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := txs.Parse(tt.b, tt.l)
			require.ErrorIs(t, err, tt.err)
		})
	}
}

func TestLimitsVerify(t *testing.T) {
	require.NoError(t, txs.DefaultLimits().Verify())
	bad := txs.DefaultLimits()
	bad.MaxEntries = 0
	require.Error(t, bad.Verify())
	bad = txs.DefaultLimits()
	bad.MaxTxBytes = 10
	require.Error(t, bad.Verify())
}

func FuzzParse(f *testing.F) {
	k := newKey(f)
	for _, u := range []txs.Unsigned{sampleAllocate(k.NodeID), sampleManifest(k.NodeID), sampleHeartbeat(k.NodeID), sampleVersioned(k.NodeID), sampleReclaim(k.NodeID), sampleLease(k.NodeID)} {
		tx, err := k.Sign(u)
		require.NoError(f, err)
		f.Add(tx.Bytes())
	}
	l := txs.DefaultLimits()
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := txs.Parse(b, l)
		if err != nil {
			return
		}
		// Accepted bytes are canonical: re-signing-free re-encoding through
		// a second parse gives identical bytes and ID.
		require.Equal(t, b, tx.Bytes())
		again, err := txs.Parse(tx.Bytes(), l)
		require.NoError(t, err)
		require.Equal(t, tx.ID(), again.ID())
		require.Equal(t, tx.Unsigned, again.Unsigned)
		require.NoError(t, txs.Validate(tx.Unsigned, l))
	})
}

func TestHeartbeatShape(t *testing.T) {
	require := require.New(t)
	k := newKey(t)
	hb := sampleHeartbeat(k.NodeID)
	tx, err := k.Sign(hb)
	require.NoError(err)
	require.Equal("heartbeat", tx.Kind())
	require.True(tx.IsHeartbeat())
	require.Zero(tx.Entries(), "the header's round is the whole statement")
	require.Empty(hb.Ranges(), "a heartbeat writes no range")

	pinned := sampleHeartbeat(k.NodeID)
	pinned.Fingerprint = ids.ID{1}
	_, err = k.Sign(pinned)
	require.ErrorIs(err, txs.ErrHeartbeatFingerprint)
	bound := sampleHeartbeat(k.NodeID)
	bound.BlockHeight = 9
	_, err = k.Sign(bound)
	require.ErrorIs(err, txs.ErrHeartbeatBlockHeight, "a heartbeat is bound to its round, not to a block height")

	// An entry under the heartbeat kind: the count field says 1.
	b := bytes.Clone(tx.Bytes())
	countAt := 2 + 1 + 4 + 32 + 8 + 32 + 20 + 8 + 8 + 8
	b[countAt+3] = 1
	_, err = txs.Parse(b, txs.DefaultLimits())
	require.ErrorIs(err, txs.ErrTooManyEntries)

	other := sampleHeartbeat(k.NodeID)
	other.Round++
	tx2, err := k.Sign(other)
	require.NoError(err)
	require.NotEqual(tx.SigningHash(), tx2.SigningHash(), "the round is signed")
}

func TestLeaseEntryRules(t *testing.T) {
	k := newKey(t)
	tx, err := k.Sign(sampleLease(k.NodeID))
	require.NoError(t, err)
	require.Equal(t, "lease", tx.Kind())
	require.Equal(t, []string{"cluster/lock/admin", "cluster/vacuum/7", "cluster/vacuum/8"}, sampleLease(k.NodeID).Ranges())

	ok := txs.LeaseEntry{Op: txs.LeaseAcquire, Range: "r", Holder: "h", TTLMs: 1}
	for name, c := range map[string]struct {
		mutate func(*txs.LeaseEntry)
		want   error
	}{
		"unknown op":          {func(e *txs.LeaseEntry) { e.Op = 4 }, txs.ErrBadLease},
		"no op":               {func(e *txs.LeaseEntry) { e.Op = 0 }, txs.ErrBadLease},
		"acquire with token":  {func(e *txs.LeaseEntry) { e.Token = 1 }, txs.ErrBadLease},
		"renew without token": {func(e *txs.LeaseEntry) { e.Op = txs.LeaseRenew }, txs.ErrBadLease},
		"release without token": {func(e *txs.LeaseEntry) {
			e.Op, e.TTLMs = txs.LeaseRelease, 0
		}, txs.ErrBadLease},
		"release with ttl": {func(e *txs.LeaseEntry) { e.Op, e.Token = txs.LeaseRelease, 1 }, txs.ErrBadLease},
		"zero ttl":         {func(e *txs.LeaseEntry) { e.TTLMs = 0 }, txs.ErrBadLease},
		"ttl too long":     {func(e *txs.LeaseEntry) { e.TTLMs = txs.MaxLeaseTTLMs + 1 }, txs.ErrBadLease},
		"empty holder":     {func(e *txs.LeaseEntry) { e.Holder = "" }, txs.ErrBadHolder},
		"holder space":     {func(e *txs.LeaseEntry) { e.Holder = "a b" }, txs.ErrBadHolder},
		"holder too long":  {func(e *txs.LeaseEntry) { e.Holder = strings.Repeat("h", 129) }, txs.ErrBadHolder},
		"bad range":        {func(e *txs.LeaseEntry) { e.Range = "a//b" }, txs.ErrBadRange},
	} {
		e := ok
		c.mutate(&e)
		_, err := k.Sign(&txs.LeaseTx{Header: header(k.NodeID), Entries: []txs.LeaseEntry{e}})
		require.ErrorIs(t, err, c.want, name)
	}
	_, err = k.Sign(&txs.LeaseTx{Header: header(k.NodeID), Entries: []txs.LeaseEntry{ok, ok}})
	require.ErrorIs(t, err, txs.ErrDuplicateEntry, "one operation per range and transaction")
	_, err = k.Sign(&txs.LeaseTx{Header: header(k.NodeID)})
	require.ErrorIs(t, err, txs.ErrNoEntries)

	// A parsed entry with an unknown operation is refused too.
	b := bytes.Clone(tx.Bytes())
	opAt := 2 + 1 + 4 + 32 + 8 + 32 + 20 + 8 + 8 + 8 + 4
	b[opAt] = 9
	_, err = txs.Parse(b, txs.DefaultLimits())
	require.ErrorIs(t, err, txs.ErrBadLease)
}
