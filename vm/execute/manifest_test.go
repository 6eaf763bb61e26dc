package execute_test

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// objectsWorld is one bucket with allocated chunk ids and a block context
// after the manifests upgrade; each block applies on its own layer.
type objectsWorld struct {
	t      *testing.T
	w      *world
	e      *execute.Membership
	s      *state.State
	bucket string
	height uint64
}

func newObjectsWorld(t *testing.T) *objectsWorld {
	w := newWorld(t, 3)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1, 2: 1})
	s, l := fresh(t)
	ow := &objectsWorld{t: t, w: w, e: e, s: s, bucket: rangesOwnedBy(e, w.keys[1].NodeID, 1)[0], height: 1}
	ow.commit(l, w.allocate(e, txs.AllocateEntry{Range: ow.bucket, Count: 100}))
	return ow
}

func (ow *objectsWorld) ctx() *execute.Context {
	c := ow.w.ctx(ow.e, ow.height)
	c.Rules.Manifests = true
	return c
}

func (ow *objectsWorld) commit(l *state.Layer, txs ...*txs.Tx) {
	require.NoError(ow.t, execute.Block(l, ow.ctx(), txs))
	_, err := l.Seal()
	require.NoError(ow.t, err)
	require.NoError(ow.t, ow.s.Accept(l, ids.ID{byte(ow.height)}, []byte{byte(ow.height)}))
	ow.height++
}

// block applies txs as the next block and returns their receipts' entries.
func (ow *objectsWorld) block(txs ...*txs.Tx) [][]state.ReceiptEntry {
	l, err := ow.s.NewLayer(nil)
	require.NoError(ow.t, err)
	ow.commit(l, txs...)
	var out [][]state.ReceiptEntry
	for _, tx := range txs {
		rc, err := ow.s.Accepted().Receipt(tx.ID())
		require.NoError(ow.t, err)
		out = append(out, rc.Entries)
	}
	return out
}

func (ow *objectsWorld) put(key string, cond txs.Condition, chunkIDs ...uint64) txs.ManifestEntry {
	m := txs.Manifest{Bucket: ow.bucket, Key: key, ContentHash: ids.ID{byte(len(chunkIDs))}}
	for _, id := range chunkIDs {
		m.Chunks = append(m.Chunks, txs.Chunk{Range: ow.bucket, ID: id, Size: 10})
		m.Size += 10
	}
	return txs.ManifestEntry{Manifest: m, Attributes: []byte("entry " + key), Condition: cond}
}

func (ow *objectsWorld) del(key string, cond txs.Condition) txs.ManifestEntry {
	return txs.ManifestEntry{Manifest: txs.Manifest{Bucket: ow.bucket, Key: key, Deleted: true}, Condition: cond}
}

func (ow *objectsWorld) object(key string) *state.Object {
	o, err := ow.s.Accepted().Object(ow.bucket, key)
	require.NoError(ow.t, err)
	return o
}

func (ow *objectsWorld) chunk(id uint64) state.Chunk {
	c, err := ow.s.Accepted().Chunk(txs.ChunkRef{Range: ow.bucket, ID: id})
	require.NoError(ow.t, err)
	return c
}

func (ow *objectsWorld) released() []uint64 {
	p, err := ow.s.ListReleased(state.ReleasedQuery{Bucket: ow.bucket, Limit: 100})
	require.NoError(ow.t, err)
	var got []uint64
	for _, r := range p.Entries {
		got = append(got, r.Chunk.ID)
	}
	return got
}

var (
	always = txs.Condition{}
	absent = txs.Condition{Kind: txs.IfAbsent}
)

func version(v uint64) txs.Condition { return txs.Condition{Kind: txs.IfVersion, Version: v} }

func TestManifestsNeedTheUpgrade(t *testing.T) {
	w := newWorld(t, 2)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1})
	bucket := rangesOwnedBy(e, w.keys[0].NodeID, 1)[0]
	write := w.write(e, txs.ManifestEntry{Manifest: txs.Manifest{Bucket: bucket, Key: "k"}})
	reclaim := w.reclaim(e, txs.ChunkRef{Range: bucket, ID: 1})
	legacy := w.put(e, txs.Manifest{Bucket: bucket, Key: "k"})

	before, after := w.ctx(e, 1), w.ctx(e, 1)
	after.Rules.Manifests = true
	for _, tt := range []struct {
		name string
		c    *execute.Context
		tx   *txs.Tx
		err  error
	}{
		{"manifest before", before, write, execute.ErrNotActivated},
		{"reclaim before", before, reclaim, execute.ErrNotActivated},
		{"putManifest after", after, legacy, execute.ErrSuperseded},
		{"putManifest before", before, legacy, nil},
		{"manifest after", after, write, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, l := fresh(t)
			_, err := execute.Tx(l, tt.c, tt.tx)
			if tt.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.err)
			}
		})
	}
}

func TestPreconditions(t *testing.T) {
	require := require.New(t)
	ow := newObjectsWorld(t)

	rc := ow.block(ow.w.write(ow.e, ow.put("k", absent)))[0]
	v1 := ow.object("k").Version
	require.Equal([]state.ReceiptEntry{{Bucket: ow.bucket, Key: "k", Version: v1}}, rc)
	require.Equal(uint64(2)<<24, v1, "the first version of an object written at height 2")
	require.Equal([]byte("entry k"), ow.object("k").Attributes)

	// Exclusive create of a live object: refused with the current version.
	rc = ow.block(ow.w.write(ow.e, ow.put("k", absent)))[0]
	require.Equal("precondition_failed", rc[0].Refused)
	require.Equal(v1, rc[0].Current)
	require.Zero(rc[0].Version)
	require.Equal(v1, ow.object("k").Version, "a refused entry writes nothing")

	// If-Match by version and by content hash.
	rc = ow.block(ow.w.write(ow.e, ow.put("k", version(v1+1))))[0]
	require.Equal("precondition_failed", rc[0].Refused)
	rc = ow.block(ow.w.write(ow.e, ow.put("k", version(v1))))[0]
	v2 := rc[0].Version
	require.Greater(v2, v1)
	require.Equal(v2, ow.object("k").Version)
	rc = ow.block(ow.w.write(ow.e, ow.put("k", txs.Condition{Kind: txs.IfContentHash, ContentHash: ids.ID{9}})))[0]
	require.Equal("precondition_failed", rc[0].Refused)
	rc = ow.block(ow.w.write(ow.e, ow.put("k", txs.Condition{Kind: txs.IfContentHash, ContentHash: ids.ID{0}})))[0]
	require.Empty(rc[0].Refused)

	// Delete, then an exclusive create succeeds again with a higher
	// version; a version condition never matches a tombstone.
	v3 := ow.object("k").Version
	rc = ow.block(ow.w.write(ow.e, ow.del("k", version(v3))))[0]
	require.Greater(rc[0].Version, v3)
	require.False(ow.object("k").Live())
	rc = ow.block(ow.w.write(ow.e, ow.put("k", version(rc[0].Version))))[0]
	require.Equal("precondition_failed", rc[0].Refused, "a deleted object matches no version")
	require.Zero(rc[0].Current)
	rc = ow.block(ow.w.write(ow.e, ow.put("k", absent)))[0]
	require.Empty(rc[0].Refused)
	require.Greater(rc[0].Version, v3)

	// Deleting what is not live writes nothing.
	rc = ow.block(ow.w.write(ow.e, ow.del("never", always)))[0]
	require.Equal([]state.ReceiptEntry{{Bucket: ow.bucket, Key: "never", Deleted: true}}, rc)
	_, err := ow.s.Accepted().Object(ow.bucket, "never")
	require.ErrorIs(err, state.ErrNotFound)
}

// Two exclusive creates of one object: in one transaction, in two
// transactions of one block, or in two blocks, exactly one writes.
func TestConcurrentExclusiveCreates(t *testing.T) {
	require := require.New(t)
	ow := newObjectsWorld(t)
	rc := ow.block(ow.w.write(ow.e, ow.put("one-tx", absent, 1), ow.put("one-tx", absent, 2)))[0]
	require.Empty(rc[0].Refused)
	require.Equal("precondition_failed", rc[1].Refused)
	require.Equal(rc[0].Version, rc[1].Current)
	require.Equal(uint64(1), ow.object("one-tx").Manifest.Chunks[0].ID, "the first writer's manifest stands")
	require.Equal(state.ChunkFree, ow.chunk(2).Status, "the refused entry bound nothing")

	rcs := ow.block(ow.w.write(ow.e, ow.put("one-block", absent, 3)), ow.w.write(ow.e, ow.put("one-block", absent, 4)))
	require.Empty(rcs[0][0].Refused)
	require.Equal("precondition_failed", rcs[1][0].Refused)

	// Unconditional writes are last-writer-wins, each a new version.
	rc = ow.block(ow.w.write(ow.e, ow.put("lww", always), ow.put("lww", always)))[0]
	require.Greater(rc[1].Version, rc[0].Version)
	require.Equal(rc[1].Version, ow.object("lww").Version)
}

func TestChunkBindingAndRelease(t *testing.T) {
	require := require.New(t)
	ow := newObjectsWorld(t)

	ow.block(ow.w.write(ow.e, ow.put("a", absent, 1, 2, 3)))
	for _, id := range []uint64{1, 2, 3} {
		require.Equal(state.Chunk{Status: state.ChunkLive, Bucket: ow.bucket, Key: "a"}, ow.chunk(id))
	}

	// Another object naming a's chunk is refused by name; the other
	// entries of its transaction still apply.
	rc := ow.block(ow.w.write(ow.e, ow.put("b", always, 4, 2), ow.put("c", always, 5)))[0]
	require.Equal("chunk_in_use", rc[0].Refused)
	require.Contains(rc[0].Detail, ow.bucket+"/a")
	require.Contains(rc[0].Detail, "#2")
	require.Empty(rc[1].Refused)
	require.Equal(state.ChunkFree, ow.chunk(4).Status)
	_, err := ow.s.Accepted().Object(ow.bucket, "b")
	require.ErrorIs(err, state.ErrNotFound)

	// An unallocated chunk is refused per entry too.
	rc = ow.block(ow.w.write(ow.e, ow.put("d", always, 1000)))[0]
	require.Equal("unallocated_chunk", rc[0].Refused)

	// An overwrite keeps the chunks it names again and releases the rest,
	// with the height.
	h := ow.height
	ow.block(ow.w.write(ow.e, ow.put("a", always, 3, 6)))
	require.Equal(state.Chunk{Status: state.ChunkReleased, Height: h}, ow.chunk(1))
	require.Equal(state.Chunk{Status: state.ChunkReleased, Height: h}, ow.chunk(2))
	require.Equal(state.ChunkLive, ow.chunk(3).Status)
	require.Equal(state.ChunkLive, ow.chunk(6).Status)
	require.Equal([]uint64{1, 2}, ow.released())

	// A released chunk can no longer be bound, not even by its old object.
	rc = ow.block(ow.w.write(ow.e, ow.put("a", always, 3, 6, 1)))[0]
	require.Equal("chunk_released", rc[0].Refused)

	// A deletion releases every chunk.
	ow.block(ow.w.write(ow.e, ow.del("a", always)))
	require.Equal([]uint64{1, 2, 3, 6}, ow.released())

	// The blob store's acknowledgement takes chunks off the list for good;
	// a live or already reclaimed chunk is refused per entry.
	rc = ow.block(ow.w.reclaim(ow.e, txs.ChunkRef{Range: ow.bucket, ID: 1}, txs.ChunkRef{Range: ow.bucket, ID: 5}, txs.ChunkRef{Range: ow.bucket, ID: 3}))[0]
	require.Empty(rc[0].Refused)
	require.Equal("not_released", rc[1].Refused, "chunk 5 belongs to c")
	require.Empty(rc[2].Refused)
	require.Equal([]uint64{2, 6}, ow.released())
	require.Equal(state.ChunkReclaimed, ow.chunk(1).Status)
	rc = ow.block(ow.w.reclaim(ow.e, txs.ChunkRef{Range: ow.bucket, ID: 1}))[0]
	require.Equal("not_released", rc[0].Refused)
	rc = ow.block(ow.w.write(ow.e, ow.put("z", always, 1)))[0]
	require.Equal("chunk_released", rc[0].Refused, "a reclaimed chunk is gone for good")
}

// A write that adopts takes chunks over from another live object (a
// rename, a multipart completion): the former holder's deletion no longer
// releases them, the adopter's does.
func TestAdoptMovesChunks(t *testing.T) {
	require := require.New(t)
	ow := newObjectsWorld(t)
	ow.block(ow.w.write(ow.e, ow.put("old", always, 1, 2)))
	moved := ow.put("new", always, 1, 3)
	moved.Adopt = true
	rc := ow.block(ow.w.write(ow.e, moved, ow.del("old", always)))[0]
	require.Empty(rc[0].Refused)
	require.Equal(state.Chunk{Status: state.ChunkLive, Bucket: ow.bucket, Key: "new"}, ow.chunk(1))
	require.Equal([]uint64{2}, ow.released(), "the old object released only what it still held")

	ow.block(ow.w.write(ow.e, ow.del("new", always)))
	require.Equal([]uint64{2, 1, 3}, ow.released(), "in the order of the heights that released them")

	// Adopting never brings a released chunk back.
	again := ow.put("again", always, 1)
	again.Adopt = true
	rc = ow.block(ow.w.write(ow.e, again))[0]
	require.Equal("chunk_released", rc[0].Refused)
}

// Chunks of a manifest written before the upgrade were never bound: a
// versioned overwrite leaves them off the released list rather than
// guessing no other legacy object names them.
func TestLegacyManifestOverwritten(t *testing.T) {
	require := require.New(t)
	ow := newObjectsWorld(t)
	c := ow.ctx()
	c.Rules.Manifests = false
	l, err := ow.s.NewLayer(nil)
	require.NoError(err)
	legacy := ow.w.put(ow.e, txs.Manifest{Bucket: ow.bucket, Key: "old", Size: 10, Chunks: []txs.Chunk{{Range: ow.bucket, ID: 1, Size: 10}}})
	require.NoError(execute.Block(l, c, []*txs.Tx{legacy}))
	_, err = l.Seal()
	require.NoError(err)
	require.NoError(ow.s.Accept(l, ids.ID{'l'}, nil))
	ow.height++
	require.Zero(ow.object("old").Version)

	rc := ow.block(ow.w.write(ow.e, ow.put("old", version(1))))[0]
	require.Equal("precondition_failed", rc[0].Refused, "a legacy manifest is version 0")
	rc = ow.block(ow.w.write(ow.e, ow.put("old", absent)))[0]
	require.Equal("precondition_failed", rc[0].Refused, "but it is live")
	rc = ow.block(ow.w.write(ow.e, ow.put("old", always, 2)))[0]
	require.Empty(rc[0].Refused)
	require.Empty(ow.released())
	require.Equal(state.ChunkFree, ow.chunk(1).Status)
	_, err = ow.s.Accepted().Manifest(ow.bucket, "old")
	require.ErrorIs(err, state.ErrNotFound, "the object moved to the versioned table")
}

func TestNextVersion(t *testing.T) {
	require.Equal(t, uint64(5)<<24, execute.NextVersion(nil, 5))
	require.Equal(t, uint64(1), execute.NextVersion(nil, 0))
	cur := &state.Object{Version: 5<<24 + 3}
	require.Equal(t, uint64(5<<24+4), execute.NextVersion(cur, 5), "a second write in one block")
	require.Equal(t, uint64(6)<<24, execute.NextVersion(cur, 6))
	require.Equal(t, uint64(9<<24+1), execute.NextVersion(&state.Object{Version: 9 << 24}, 6), "never down")
}
