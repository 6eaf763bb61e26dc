package state_test

import (
	"fmt"
	"testing"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
)

var txSeq byte

// applied writes changes as one transaction of a new accepted block.
func applied(t *testing.T, s *state.State, c *state.Changes) {
	t.Helper()
	l := layerOn(t, s, nil, func(l *state.Layer) {
		txSeq++
		c.Receipt = &state.Receipt{TxID: ids.ID{'t', txSeq}, Height: l.Height(), Kind: "manifest"}
		c.Round, c.SigningHash = 1, ids.ID{'s', txSeq}
		require.NoError(t, l.Apply(c))
	})
	require.NoError(t, s.Accept(l, ids.ID{'b', txSeq}, []byte{txSeq}))
}

func object(bucket, key string, version uint64, deleted bool) *state.Object {
	return &state.Object{Manifest: txs.Manifest{Bucket: bucket, Key: key, Deleted: deleted}, Version: version, Height: version >> 24, Attributes: []byte("attrs of " + key)}
}

func tombstone(bucket, key string, version uint64) *state.Object {
	o := object(bucket, key, version, true)
	o.Attributes = nil
	return o
}

func genesis(t *testing.T) *state.State {
	s := open(t, memdb.New())
	g := layerOn(t, s, nil, nil)
	require.NoError(t, s.Accept(g, ids.ID{'g'}, []byte("g")))
	return s
}

func TestObjectsChunksAndReleasedRecords(t *testing.T) {
	require := require.New(t)
	s := genesis(t)
	chunk := txs.Chunk{Range: "b/band", ID: 7, Size: 3, Hash: ids.ID{'h'}}
	o := &state.Object{Manifest: txs.Manifest{Bucket: "b", Key: "k", Size: 3, ContentHash: ids.ID{1}, Chunks: []txs.Chunk{chunk}}, Attributes: []byte{0, 1, 2}, Version: 5 << 24, Height: 5}
	applied(t, s, &state.Changes{
		Objects:  []*state.Object{o},
		Chunks:   []state.ChunkUpdate{{Ref: chunk.Ref(), Record: state.Chunk{Status: state.ChunkLive, Bucket: "b", Key: "k"}}},
		Released: []state.ReleasedUpdate{{Height: 4, Chunk: txs.Chunk{Range: "b", ID: 1, Size: 9, Hash: ids.ID{'o'}}}},
	})
	r := s.Accepted()
	got, err := r.Object("b", "k")
	require.NoError(err)
	require.Equal(o, got)
	require.True(got.Live())
	c, err := r.Chunk(chunk.Ref())
	require.NoError(err)
	require.Equal(state.Chunk{Status: state.ChunkLive, Bucket: "b", Key: "k"}, c)
	free, err := r.Chunk(txs.ChunkRef{Range: "b", ID: 8})
	require.NoError(err)
	require.Equal(state.ChunkFree, free.Status)
	_, err = r.Object("b", "other")
	require.ErrorIs(err, state.ErrNotFound)

	page, err := s.ListReleased(state.ReleasedQuery{Bucket: "b", Limit: 10})
	require.NoError(err)
	require.Equal([]state.Released{{Chunk: txs.Chunk{Range: "b", ID: 1, Size: 9, Hash: ids.ID{'o'}}, Height: 4}}, page.Entries)
	applied(t, s, &state.Changes{Reclaimed: []state.ReleasedUpdate{{Height: 4, Chunk: txs.Chunk{Range: "b", ID: 1}}}})
	page, err = s.ListReleased(state.ReleasedQuery{Bucket: "b", Limit: 10})
	require.NoError(err)
	require.Empty(page.Entries, "a reclaimed chunk leaves the list")
}

func TestReleasedListPages(t *testing.T) {
	require := require.New(t)
	s := genesis(t)
	var all []state.Released
	var ups []state.ReleasedUpdate
	for h := uint64(3); h > 0; h-- { // written out of order on purpose
		for _, r := range []string{"b/z", "b", "b/a"} {
			c := txs.Chunk{Range: r, ID: h * 10, Size: h}
			ups = append(ups, state.ReleasedUpdate{Height: h, Chunk: c})
		}
	}
	ups = append(ups, state.ReleasedUpdate{Height: 1, Chunk: txs.Chunk{Range: "bb", ID: 1, Size: 1}}) // another bucket
	applied(t, s, &state.Changes{Released: ups})
	for h := uint64(1); h <= 3; h++ {
		for _, r := range []string{"b", "b/a", "b/z"} {
			all = append(all, state.Released{Chunk: txs.Chunk{Range: r, ID: h * 10, Size: h}, Height: h})
		}
	}
	var got []state.Released
	var after *state.Released
	for pages := 0; ; pages++ {
		require.Less(pages, 10)
		page, err := s.ListReleased(state.ReleasedQuery{Bucket: "b", After: after, Limit: 4})
		require.NoError(err)
		require.LessOrEqual(len(page.Entries), 4)
		got = append(got, page.Entries...)
		if !page.Truncated {
			break
		}
		after = &page.Entries[len(page.Entries)-1]
	}
	require.Equal(all, got, "by height, then chunk; one bucket only; every entry once")
}

func TestListObjects(t *testing.T) {
	s := genesis(t)
	live := []string{"a", "dir/x", "dir/y", "dir/sub/1", "dir/sub/2", "dir2/z", "e", "photos/2026/cat"}
	var objs []*state.Object
	for i, k := range live {
		objs = append(objs, object("b", k, uint64(i+1)<<24, false))
	}
	objs = append(objs,
		tombstone("b", "gone", 9<<24), tombstone("b", "dead/1", 9<<24), tombstone("b", "dead/2", 9<<24),
		object("other", "a", 1<<24, false), object("bb", "a", 1<<24, false),
	)
	applied(t, s, &state.Changes{Objects: objs})

	keys := func(p *state.ObjectPage) []string {
		var ks []string
		for _, o := range p.Objects {
			ks = append(ks, o.Manifest.Key)
		}
		return ks
	}
	list := func(q state.ObjectQuery) *state.ObjectPage {
		q.Bucket = "b"
		if q.ScanLimit == 0 {
			q.ScanLimit = 1000
		}
		p, err := s.ListObjects(q)
		require.NoError(t, err)
		return p
	}

	t.Run("all live keys in order, tombstones and other buckets left out", func(t *testing.T) {
		p := list(state.ObjectQuery{Limit: 100})
		require.Equal(t, []string{"a", "dir/sub/1", "dir/sub/2", "dir/x", "dir/y", "dir2/z", "e", "photos/2026/cat"}, keys(p))
		require.False(t, p.Truncated)
		require.Equal(t, []byte("attrs of dir/x"), p.Objects[3].Attributes)
	})
	t.Run("prefix and start after", func(t *testing.T) {
		require.Equal(t, []string{"dir/sub/2", "dir/x", "dir/y"}, keys(list(state.ObjectQuery{Prefix: "dir/", StartAfter: "dir/sub/1", Limit: 100})))
		require.Empty(t, keys(list(state.ObjectQuery{Prefix: "dir/", StartAfter: "dir/z", Limit: 100})))
		require.Equal(t, []string{"a", "dir/sub/1"}, keys(list(state.ObjectQuery{StartAfter: "", Limit: 2})))
	})
	t.Run("delimiter rolls up directories, only those with a live object", func(t *testing.T) {
		p := list(state.ObjectQuery{Delimiter: "/", Limit: 100})
		require.Equal(t, []string{"a", "e"}, keys(p))
		require.Equal(t, []string{"dir/", "dir2/", "photos/"}, p.CommonPrefixes, "dead/ holds only tombstones")
		p = list(state.ObjectQuery{Prefix: "dir/", Delimiter: "/", Limit: 100})
		require.Equal(t, []string{"dir/x", "dir/y"}, keys(p))
		require.Equal(t, []string{"dir/sub/"}, p.CommonPrefixes)
	})
	t.Run("pages continue after a common prefix", func(t *testing.T) {
		var gotKeys, gotPrefixes []string
		after := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 20)
			p := list(state.ObjectQuery{Delimiter: "/", StartAfter: after, Limit: 1})
			require.LessOrEqual(t, len(p.Objects)+len(p.CommonPrefixes), 1)
			gotKeys, gotPrefixes = append(gotKeys, keys(p)...), append(gotPrefixes, p.CommonPrefixes...)
			if !p.Truncated {
				break
			}
			after = p.Next
		}
		require.Equal(t, []string{"a", "e"}, gotKeys)
		require.Equal(t, []string{"dir/", "dir2/", "photos/"}, gotPrefixes)
	})
	t.Run("a scan limit bounds a page of tombstones", func(t *testing.T) {
		p := list(state.ObjectQuery{Prefix: "d", StartAfter: "dead", Limit: 100, ScanLimit: 1})
		require.Empty(t, p.Objects)
		require.True(t, p.Truncated)
		require.Equal(t, "dead/1", p.Next)
		p = list(state.ObjectQuery{Prefix: "d", StartAfter: p.Next, Limit: 100, ScanLimit: 1})
		require.Empty(t, p.Objects)
		require.Equal(t, "dead/2", p.Next)
		require.True(t, p.Truncated)
		p = list(state.ObjectQuery{Prefix: "d", StartAfter: p.Next, Limit: 1, ScanLimit: 2})
		require.Equal(t, []string{"dir/sub/1"}, keys(p))
	})
	t.Run("a page needs bounds", func(t *testing.T) {
		_, err := s.ListObjects(state.ObjectQuery{Bucket: "b"})
		require.ErrorIs(t, err, state.ErrBadQuery)
	})
}

// A chain upgraded after legacy manifests were written lists them with the
// versioned objects, in one key order; a versioned write replaces the
// legacy record.
func TestListObjectsMergesLegacyManifests(t *testing.T) {
	require := require.New(t)
	s := genesis(t)
	var legacy []*txs.Manifest
	for _, k := range []string{"a", "c", "e"} {
		legacy = append(legacy, &txs.Manifest{Bucket: "b", Key: k})
	}
	applied(t, s, &state.Changes{Manifests: legacy})
	applied(t, s, &state.Changes{Objects: []*state.Object{object("b", "b", 1<<24, false), object("b", "c", 2<<24, false), object("b", "d", 3<<24, false)}})

	p, err := s.ListObjects(state.ObjectQuery{Bucket: "b", Limit: 10, ScanLimit: 10})
	require.NoError(err)
	var got []string
	for _, o := range p.Objects {
		got = append(got, fmt.Sprintf("%s@%d", o.Manifest.Key, o.Version>>24))
	}
	require.Equal([]string{"a@0", "b@1", "c@2", "d@3", "e@0"}, got)
	_, err = s.Accepted().Manifest("b", "c")
	require.ErrorIs(err, state.ErrNotFound, "the versioned write dropped the legacy record")
	o, err := s.Accepted().Object("b", "a")
	require.NoError(err)
	require.Zero(o.Version, "a legacy manifest reads as version 0")
}

func TestReceiptVersions(t *testing.T) {
	require := require.New(t)
	s := genesis(t)
	entries := []state.ReceiptEntry{{Bucket: "b", Key: "k", Version: 7, Refused: "precondition_failed", Detail: "at 6", Current: 6}, {Range: "b", ID: 3}}
	l := layerOn(t, s, nil, func(l *state.Layer) {
		for i, kind := range []string{"manifest", "reclaim"} {
			require.NoError(l.Apply(&state.Changes{Receipt: &state.Receipt{TxID: ids.ID{byte(i)}, Height: 1, Kind: kind, Entries: entries}, SigningHash: ids.ID{byte(i)}}))
		}
		require.NoError(l.Apply(&state.Changes{Receipt: &state.Receipt{TxID: ids.ID{9}, Height: 1, Kind: "putManifest", Entries: entries}, SigningHash: ids.ID{9}}))
	})
	require.NoError(s.Accept(l, ids.ID{'b'}, nil))
	for i := range 2 {
		rc, err := s.Accepted().Receipt(ids.ID{byte(i)})
		require.NoError(err)
		require.Equal(entries, rc.Entries)
	}
	rc, err := s.Accepted().Receipt(ids.ID{9})
	require.NoError(err)
	require.Equal([]state.ReceiptEntry{{Bucket: "b", Key: "k"}, {Range: "b"}}, rc.Entries, "an older kind's receipt keeps its version 1 bytes")
}
