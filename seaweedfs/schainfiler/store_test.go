package schainfiler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/seaweedfs/schainfiler"
)

// chain is an in-memory Chain: one version counter per key, conditions
// checked under one lock, as the owner's execution checks them in order.
type chain struct {
	mu      sync.Mutex
	records map[string]schainfiler.Record // bucket + "\n" + key
	writes  []schainfiler.Write
	seq     uint64
	// released are the chunks the chain released: an overwrite's or a
	// deletion's chunks the object no longer names (Range and ID only).
	released []schainfiler.Chunk
	// noThen: a chain that does not answer Write.ThenGet (an older node).
	noThen bool
}

func newChain() *chain { return &chain{records: map[string]schainfiler.Record{}} }

func (c *chain) Get(_ context.Context, bucket, key string) (schainfiler.Record, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.records[bucket+"\n"+key]
	if !ok {
		return schainfiler.Record{}, schainfiler.ErrNotFound
	}
	return r, nil
}

func (c *chain) Put(_ context.Context, bucket string, w schainfiler.Write) (schainfiler.Written, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.records[bucket+"\n"+w.Key]
	live := ok && !cur.Deleted
	switch {
	case w.IfAbsent && live, w.IfVersion != 0 && (!live || cur.Version != w.IfVersion):
		return schainfiler.Written{}, schainfiler.ErrPreconditionFailed
	case w.Deleted && !live:
		return schainfiler.Written{}, nil
	}
	c.bind(bucket, w, cur, live)
	c.seq++
	c.records[bucket+"\n"+w.Key] = schainfiler.Record{Key: w.Key, Version: c.seq, Deleted: w.Deleted, Attributes: w.Attributes, Chunks: w.Chunks}
	c.writes = append(c.writes, w)
	out := schainfiler.Written{Version: c.seq}
	if w.ThenGet != "" && !c.noThen {
		r, ok := c.records[bucket+"\n"+w.ThenGet]
		if !ok {
			r = schainfiler.Record{Key: w.ThenGet, Deleted: true}
		}
		out.Then = &r
	}
	return out, nil
}

// bind is the chain's rule for the chunks of w, which replaces cur (live
// or not): a chunk another live object holds moves to w's (w adopts), and
// the chunks cur held that w does not name are released.
func (c *chain) bind(bucket string, w schainfiler.Write, cur schainfiler.Record, live bool) {
	ref := func(ch schainfiler.Chunk) schainfiler.Chunk { return schainfiler.Chunk{Range: ch.Range, ID: ch.ID} }
	named := map[schainfiler.Chunk]bool{}
	for _, ch := range w.Chunks {
		named[ref(ch)] = true
	}
	for k, r := range c.records {
		if k == bucket+"\n"+w.Key || r.Deleted {
			continue
		}
		r.Chunks = slices.DeleteFunc(slices.Clone(r.Chunks), func(ch schainfiler.Chunk) bool { return named[ref(ch)] })
		c.records[k] = r
	}
	if !live {
		return
	}
	for _, ch := range cur.Chunks {
		if !named[ref(ch)] {
			c.released = append(c.released, ref(ch))
		}
	}
}

func (c *chain) List(_ context.Context, bucket, prefix, startAfter string, limit int) (schainfiler.Page, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k, r := range c.records {
		b, key, _ := strings.Cut(k, "\n")
		if b == bucket && strings.HasPrefix(key, prefix) && key > startAfter && !r.Deleted {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	var p schainfiler.Page
	for i, k := range keys {
		if i == limit {
			p.Truncated, p.Next = true, keys[i-1]
			break
		}
		p.Records = append(p.Records, c.records[bucket+"\n"+k])
	}
	return p, nil
}

func (c *chain) Released(context.Context, string, int) ([]schainfiler.Chunk, error) { return nil, nil }
func (c *chain) Reclaim(context.Context, []schainfiler.Chunk) error                 { return nil }

func store(t *testing.T, c *chain, cfg schainfiler.Config) *schainfiler.Store {
	s, err := schainfiler.New(cfg, c)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestEntriesAndTombstones(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	s := store(t, newChain(), schainfiler.DefaultConfig("filer"))
	require.NoError(s.Put(ctx, "/buckets/b", "k", []byte("entry"), nil, false))
	got, err := s.Find(ctx, "/buckets/b", "k")
	require.NoError(err)
	require.Equal([]byte("entry"), got)
	require.NoError(s.Delete(ctx, "/buckets/b", "k"))
	_, err = s.Find(ctx, "/buckets/b", "k")
	require.ErrorIs(err, schainfiler.ErrNotFound)
	_, err = s.Find(ctx, "/", "never")
	require.ErrorIs(err, schainfiler.ErrNotFound)

	_, err = s.Find(ctx, "/", "\xff")
	require.ErrorIs(err, schainfiler.ErrBadPath)
	require.ErrorIs(s.Put(ctx, "/", strings.Repeat("x", 1024), nil, nil, false), schainfiler.ErrTooLarge)
	require.ErrorIs(s.Put(ctx, "/", "big", make([]byte, 32<<10+1), nil, false), schainfiler.ErrTooLarge)
}

// Two filers check that a path is absent and both create it: under a
// guard, exactly one write commits, and the other request learns that its
// write was refused.
func TestGuardMakesCheckAndWriteOneStep(t *testing.T) {
	require := require.New(t)
	c := newChain()
	filers := []*schainfiler.Store{store(t, c, schainfiler.DefaultConfig("filer")), store(t, c, schainfiler.DefaultConfig("filer"))}
	var ctxs []context.Context
	for _, f := range filers {
		ctx := schainfiler.Guard(context.Background(), "/buckets/b/k")
		_, err := f.Find(ctx, "/buckets/b", "k")
		require.ErrorIs(err, schainfiler.ErrNotFound, "both checks pass")
		ctxs = append(ctxs, ctx)
	}
	errs := []error{
		filers[0].Put(ctxs[0], "/buckets/b", "k", []byte("first"), nil, false),
		filers[1].Put(ctxs[1], "/buckets/b", "k", []byte("second"), nil, false),
	}
	require.NoError(errs[0])
	require.ErrorIs(errs[1], schainfiler.ErrPreconditionFailed)
	require.False(schainfiler.Refused(ctxs[0]))
	require.True(schainfiler.Refused(ctxs[1]))
	got, err := filers[1].Find(context.Background(), "/buckets/b", "k")
	require.NoError(err)
	require.Equal([]byte("first"), got)

	// A guarded overwrite requires the version its check read; a second
	// read of the path (the filer reads again before it updates) does not
	// move it.
	ctx := schainfiler.Guard(context.Background(), "/buckets/b/k")
	_, err = filers[0].Find(ctx, "/buckets/b", "k")
	require.NoError(err)
	require.NoError(filers[1].Put(context.Background(), "/buckets/b", "k", []byte("meanwhile"), nil, false))
	_, err = filers[0].Find(ctx, "/buckets/b", "k")
	require.NoError(err)
	require.ErrorIs(filers[0].Put(ctx, "/buckets/b", "k", []byte("late"), nil, false), schainfiler.ErrPreconditionFailed)

	// Other paths under the same request (parent directories) are written
	// unconditionally.
	ctx = schainfiler.Guard(context.Background(), "/buckets/b/new")
	_, err = filers[0].Find(ctx, "/buckets", "b")
	require.ErrorIs(err, schainfiler.ErrNotFound)
	require.NoError(filers[1].Put(context.Background(), "/buckets", "b", []byte("dir"), nil, false))
	require.NoError(filers[0].Put(ctx, "/buckets", "b", []byte("dir"), nil, false))
	require.False(schainfiler.Refused(ctx))
}

// TestWriteReadsItsDirectory: a new entry's write brings its directory's
// entry back, as it is after the write, and the filer's check of that
// directory right after answers from it without a read of its own, once;
// the check sees a directory another filer removed before the write (the
// filer then recreates it). Other reads, other writes and a chain that
// does not answer read as before.
func TestWriteReadsItsDirectory(t *testing.T) {
	require := require.New(t)
	c := newChain()
	s, other := store(t, c, schainfiler.DefaultConfig("filer")), store(t, c, schainfiler.DefaultConfig("filer"))
	bg := context.Background()
	require.NoError(s.Put(bg, "/buckets", "b", []byte("dir b"), nil, false))
	gets := func() uint64 { return s.Calls().Gets }

	ctx := schainfiler.WithDirectoryRead(bg, "/buckets/b/k")
	require.NoError(s.Put(ctx, "/buckets/b", "k", []byte("entry"), nil, false))
	before := gets()
	got, err := s.Find(ctx, "/buckets", "b")
	require.NoError(err)
	require.Equal([]byte("dir b"), got)
	require.Equal(before, gets(), "the directory came with the write")
	_, err = s.Find(ctx, "/buckets", "b")
	require.NoError(err)
	require.Equal(before+1, gets(), "once")
	require.Equal("/buckets\x00b", c.writes[len(c.writes)-1].ThenGet)

	// Removed by another filer before the write: the check finds nothing.
	require.NoError(other.Delete(bg, "/buckets", "b"))
	ctx = schainfiler.WithDirectoryRead(bg, "/buckets/b/k2")
	require.NoError(s.Put(ctx, "/buckets/b", "k2", []byte("entry"), nil, false))
	before = gets()
	_, err = s.Find(ctx, "/buckets", "b")
	require.ErrorIs(err, schainfiler.ErrNotFound)
	require.Equal(before, gets())

	// Only the marked path's write asks, only its directory answers.
	ctx = schainfiler.WithDirectoryRead(bg, "/buckets/b/k3")
	require.NoError(s.Put(ctx, "/buckets/b", "other", []byte("entry"), nil, false))
	require.Empty(c.writes[len(c.writes)-1].ThenGet)
	require.NoError(s.Put(ctx, "/buckets/b", "k3", []byte("entry"), nil, false))
	before = gets()
	_, err = s.Find(ctx, "/buckets/b", "k3")
	require.NoError(err)
	require.Equal(before+1, gets(), "the entry itself is read")

	// An entry of the root: the root has no entry; nothing is asked.
	ctx = schainfiler.WithDirectoryRead(bg, "/top")
	require.NoError(s.Put(ctx, "/", "top", []byte("entry"), nil, false))
	require.Empty(c.writes[len(c.writes)-1].ThenGet)

	// A chain that does not answer: the check reads.
	c.noThen = true
	require.NoError(s.Put(bg, "/buckets", "b", []byte("dir b again"), nil, false))
	ctx = schainfiler.WithDirectoryRead(bg, "/buckets/b/k4")
	require.NoError(s.Put(ctx, "/buckets/b", "k4", []byte("entry"), nil, false))
	before = gets()
	got, err = s.Find(ctx, "/buckets", "b")
	require.NoError(err)
	require.Equal([]byte("dir b again"), got)
	require.Equal(before+1, gets())
}

func TestListAndDeleteChildren(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	cfg := schainfiler.DefaultConfig("filer")
	cfg.PageSize = 2
	s := store(t, newChain(), cfg)
	for _, n := range []string{"a", "b1", "b2", "b3", "c"} {
		require.NoError(s.Put(ctx, "/d", n, []byte(n), nil, false))
	}
	require.NoError(s.Put(ctx, "/d/sub", "x", []byte("x"), nil, false))
	require.NoError(s.Put(ctx, "/d2", "y", []byte("y"), nil, false))
	require.NoError(s.Delete(ctx, "/d", "b2"))

	list := func(start string, include bool, limit int64, prefix string) []string {
		var names []string
		_, err := s.List(ctx, "/d", start, include, limit, prefix, func(name string, encoded []byte) (bool, error) {
			require.Equal(name, string(encoded))
			names = append(names, name)
			return true, nil
		})
		require.NoError(err)
		return names
	}
	require.Equal([]string{"a", "b1", "b3", "c"}, list("", false, 100, ""), "the directory's entries only, in pages of 2")
	require.Equal([]string{"b1", "b3"}, list("", false, 100, "b"))
	require.Equal([]string{"b3", "c"}, list("b1", false, 100, ""))
	require.Equal([]string{"b1", "b3"}, list("b1", true, 2, ""))
	require.Equal([]string{"a"}, list("", false, 1, ""))

	stopped := 0
	last, err := s.List(ctx, "/d", "", false, 100, "", func(string, []byte) (bool, error) { stopped++; return stopped < 2, nil })
	require.NoError(err)
	require.Equal("b1", last)

	require.NoError(s.DeleteChildren(ctx, "/d"))
	require.Empty(list("", false, 100, ""))
	_, err = s.Find(ctx, "/d/sub", "x")
	require.NoError(err, "a subdirectory's entries are not the directory's")
}

func TestKV(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	c := newChain()
	s := store(t, c, schainfiler.DefaultConfig("filer"))
	key := []byte{0, 0xff, 'k'}
	_, err := s.KvGet(ctx, key)
	require.ErrorIs(err, schainfiler.ErrKvNotFound)
	require.NoError(s.KvPut(ctx, key, []byte("v")))
	v, err := s.KvGet(ctx, key)
	require.NoError(err)
	require.Equal([]byte("v"), v)
	require.NoError(s.KvDelete(ctx, key))
	_, err = s.KvGet(ctx, key)
	require.ErrorIs(err, schainfiler.ErrKvNotFound)
	_, err = c.Get(ctx, "filer.kv", "kv/00ff6b")
	require.NoError(err, "KV values live in the reserved bucket, keyed by hex")
}

func TestChunksBoundWhereTheirKeysCameFromSChain(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	c := newChain()
	cfg := schainfiler.DefaultConfig("weed")
	cfg.KeyPrefix, cfg.VolumeBand, cfg.MaxChunks = "weed", 4, 3
	s := store(t, c, cfg)
	chunks := []schainfiler.FileChunk{{FileID: "9,01637037d6", Size: 10}, {FileID: "9,01637037d6", Size: 10}, {FileID: "3,0a00000001", Size: 5}, {FileID: "3,0b00000001"}, {FileID: "bad"}}
	require.NoError(s.Put(ctx, "/", "f", []byte("e"), chunks, false))
	w := c.writes[len(c.writes)-1]
	require.Equal([]schainfiler.Chunk{{Range: "weed/keys/2", ID: 1, Size: 10}, {Range: "weed/keys/0", ID: 10, Size: 5}}, w.Chunks, "once each, with bytes, in the band of their volume")
	require.True(w.Adopt, "an entry takes its chunks over from one it was renamed from")

	require.NoError(s.Put(ctx, "/", "linked", []byte("e"), chunks, true))
	require.Empty(c.writes[len(c.writes)-1].Chunks, "a hard link's chunks belong to its KV record")
	many := slices.Repeat([]schainfiler.FileChunk{{Size: 1}}, 4)
	for i := range many {
		many[i].FileID = "1,0" + string(rune('1'+i)) + "00000001"
	}
	require.NoError(s.Put(ctx, "/", "many", []byte("e"), many, false))
	require.Equal([]schainfiler.Chunk{{Range: "weed/keys/0", ID: 1, Size: 1}, {Range: "weed/keys/0", ID: 2, Size: 1}, {Range: "weed/keys/0", ID: 3, Size: 1}}, c.writes[len(c.writes)-1].Chunks,
		"more chunks than a manifest may name: the first it may (TestGrowthPastMaxChunksKeepsItsChunks)")

	plain := store(t, c, schainfiler.DefaultConfig("filer"))
	require.NoError(plain.Put(ctx, "/", "f", []byte("e"), chunks, false))
	require.Empty(c.writes[len(c.writes)-1].Chunks, "keys the masters did not take from S-Chain are never bound")

	bad := schainfiler.DefaultConfig("filer")
	bad.KeyPrefix = "weed"
	_, err := schainfiler.New(bad, c)
	require.Error(err)
	require.False(errors.Is(err, schainfiler.ErrNotFound))
}

func TestParseFileID(t *testing.T) {
	for fid, want := range map[string][2]uint64{"3,01637037d6": {3, 1}, "12,ffffffffffffffff00000000": {12, 1<<64 - 1}} {
		v, k, ok := schainfiler.ParseFileID(fid)
		require.True(t, ok, fid)
		require.Equal(t, want, [2]uint64{uint64(v), k})
	}
	for _, bad := range []string{"", "3", "3,", "3,637037d6", "x,01637037d6", "3,0g637037d6"} {
		_, _, ok := schainfiler.ParseFileID(bad)
		require.False(t, ok, bad)
	}
}

// TestCallsCountTheExchanges: every read, write and listing the store
// makes of the chain is counted by kind, KV calls included.
func TestCallsCountTheExchanges(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	s := store(t, newChain(), schainfiler.DefaultConfig("filer"))
	require.Equal(schainfiler.Calls{}, s.Calls())
	require.NoError(s.Put(ctx, "/d", "a", []byte("e"), nil, false))
	require.NoError(s.KvPut(ctx, []byte("k"), []byte("v")))
	_, err := s.Find(ctx, "/d", "a")
	require.NoError(err)
	_, err = s.Find(ctx, "/d", "missing")
	require.ErrorIs(err, schainfiler.ErrNotFound)
	_, err = s.KvGet(ctx, []byte("k"))
	require.NoError(err)
	_, err = s.List(ctx, "/d", "", false, 10, "", func(string, []byte) (bool, error) { return true, nil })
	require.NoError(err)
	require.NoError(s.Delete(ctx, "/d", "a"))
	require.Equal(schainfiler.Calls{Gets: 3, Puts: 3, Lists: 1}, s.Calls())
}

// TestNULInAPathIsRefused: NUL ends a directory in the store's keys, so
// /d/"a\0b" and /d"\0a"/b would be one manifest (issue 46, item 6). Both
// are refused by name before anything is read or written, and neither
// overwrites the other.
func TestNULInAPathIsRefused(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	c := newChain()
	s := store(t, c, schainfiler.DefaultConfig("filer"))
	require.ErrorIs(s.Put(ctx, "/d", "a\x00b", []byte("first"), nil, false), schainfiler.ErrNULInPath)
	err := s.Put(ctx, "/d\x00a", "b", []byte("second"), nil, false)
	require.ErrorIs(err, schainfiler.ErrNULInPath)
	require.Contains(err.Error(), "hint", "the refusal says what to do")
	require.Empty(c.writes, "nothing written")

	_, err = s.Find(ctx, "/d", "a\x00b")
	require.ErrorIs(err, schainfiler.ErrNULInPath)
	require.ErrorIs(s.Delete(ctx, "/d\x00a", "b"), schainfiler.ErrNULInPath)
	_, err = s.List(ctx, "/d\x00a", "", false, 10, "", func(string, []byte) (bool, error) { return true, nil })
	require.ErrorIs(err, schainfiler.ErrNULInPath)
	_, err = s.List(ctx, "/d", "", false, 10, "a\x00", func(string, []byte) (bool, error) { return true, nil })
	require.ErrorIs(err, schainfiler.ErrNULInPath, "a prefix with NUL names no entry of /d")
	require.ErrorIs(s.DeleteChildren(ctx, "/d\x00a"), schainfiler.ErrNULInPath)

	// Paths without NUL are stored as before.
	require.NoError(s.Put(ctx, "/d", "a b", []byte("e"), nil, false))
	require.Equal("/d\x00a b", c.writes[0].Key)
}

// TestGrowthPastMaxChunksKeepsItsChunks (issue 46, item 7): an entry whose
// chunks were bound grows past maxChunks. The store must not then bind
// none of them, which has the chain release the chunks the entry still
// uses (a blob store deletes released chunks, and a released chunk can
// never be bound again). It keeps binding the first maxChunks, which are
// the ones it bound (SeaweedFS appends an entry's new chunks); a rename
// moves the same ones; only chunks the entry no longer names are released.
// A write that would unbind a chunk the entry still names (new chunks
// before bound ones) is refused with ErrTooManyChunks and changes nothing.
func TestGrowthPastMaxChunksKeepsItsChunks(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	c := newChain()
	cfg := schainfiler.DefaultConfig("weed")
	cfg.KeyPrefix, cfg.VolumeBand, cfg.MaxChunks, cfg.ReclaimEvery = "weed", 4, 3, 0
	s := store(t, c, cfg)
	chunk := func(ids ...int) []schainfiler.FileChunk {
		out := make([]schainfiler.FileChunk, 0, len(ids))
		for _, id := range ids {
			out = append(out, schainfiler.FileChunk{FileID: fmt.Sprintf("1,%x%08x", id, 7), Size: 10})
		}
		return out
	}
	bound := func(dir, name string) []uint64 {
		r, err := c.Get(ctx, "weed", schainfiler.Key(dir, name))
		require.NoError(err)
		var out []uint64
		for _, ch := range r.Chunks {
			out = append(out, ch.ID)
		}
		return out
	}
	releasedIDs := func() []uint64 {
		var out []uint64
		for _, ch := range c.released {
			out = append(out, ch.ID)
		}
		return out
	}

	require.NoError(s.Put(ctx, "/d", "f", []byte("e"), chunk(1, 2), false))
	require.Equal([]uint64{1, 2}, bound("/d", "f"))
	require.NoError(s.Put(ctx, "/d", "f", []byte("e"), chunk(1, 2, 3, 4), false))
	require.Empty(c.released, "growing past maxChunks released chunks the entry still names")
	require.Equal([]uint64{1, 2, 3}, bound("/d", "f"), "the chunks it bound stay bound, and as many more as fit")
	require.NoError(s.Put(ctx, "/d", "f", []byte("e"), chunk(1, 2, 3, 4, 5), false))
	require.Empty(c.released)

	// A rename (the filer writes the new entry, then deletes the old one)
	// moves the bound chunks: deleting the old entry releases none.
	require.NoError(s.Put(ctx, "/d", "g", []byte("e"), chunk(1, 2, 3, 4, 5), false))
	require.NoError(s.Delete(ctx, "/d", "f"))
	require.Empty(c.released, "a rename released chunks the new entry names")
	require.Equal([]uint64{1, 2, 3}, bound("/d", "g"))

	// What the entry no longer names is released, as before.
	require.NoError(s.Put(ctx, "/d", "g", []byte("e"), chunk(1), false))
	require.Equal([]uint64{2, 3}, releasedIDs())

	// New chunks ahead of bound ones: binding the first maxChunks would
	// unbind a chunk still named, so the write is refused by name, and the
	// entry stays as it was.
	c.released = nil
	require.NoError(s.Put(ctx, "/d", "h", []byte("old"), chunk(6, 7), false))
	err := s.Put(ctx, "/d", "h", []byte("new"), chunk(8, 9, 6, 7), false)
	require.ErrorIs(err, schainfiler.ErrTooManyChunks)
	require.Contains(err.Error(), "hint")
	require.Empty(c.released)
	got, err := s.Find(ctx, "/d", "h")
	require.NoError(err)
	require.Equal([]byte("old"), got)
	require.Equal([]uint64{6, 7}, bound("/d", "h"))

	// An entry that never had bound chunks binds the first maxChunks.
	require.NoError(s.Put(ctx, "/d", "big", []byte("e"), chunk(10, 11, 12, 13), false))
	require.Equal([]uint64{10, 11, 12}, bound("/d", "big"))
	require.Empty(c.released)
}

// interleaved is a chain on which another filer's write lands right
// before the store's next write.
type interleaved struct {
	*chain
	once   sync.Once
	before schainfiler.Write
}

func (c *interleaved) Put(ctx context.Context, bucket string, w schainfiler.Write) (schainfiler.Written, error) {
	c.once.Do(func() { _, _ = c.chain.Put(ctx, bucket, c.before) })
	return c.chain.Put(ctx, bucket, w)
}

// TestGrowthPastMaxChunksRereadsAfterAnotherWrite: the chunks a write of
// more chunks than a manifest binds keeps are read, and the write is
// conditional on that read: when another filer's write of the entry comes
// in between and binds other chunks the entry names, the store reads them
// again and keeps them rather than releasing them.
func TestGrowthPastMaxChunksRereadsAfterAnotherWrite(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	c := newChain()
	cfg := schainfiler.DefaultConfig("weed")
	cfg.KeyPrefix, cfg.VolumeBand, cfg.MaxChunks, cfg.ReclaimEvery = "weed", 4, 3, 0
	chunk := func(id uint64) schainfiler.Chunk { return schainfiler.Chunk{Range: "weed/keys/0", ID: id, Size: 10} }
	fc := func(ids ...uint64) []schainfiler.FileChunk {
		out := make([]schainfiler.FileChunk, 0, len(ids))
		for _, id := range ids {
			out = append(out, schainfiler.FileChunk{FileID: fmt.Sprintf("1,%x%08x", id, 7), Size: 10})
		}
		return out
	}
	s0 := store(t, c, cfg)
	require.NoError(s0.Put(ctx, "/d", "f", []byte("e"), fc(1, 2), false))
	// Between the store's read and its write, another filer binds 5 to the
	// entry, which the store's write names last.
	other := &interleaved{chain: c, before: schainfiler.Write{Key: schainfiler.Key("/d", "f"), Attributes: []byte("other"), Chunks: []schainfiler.Chunk{chunk(1), chunk(5)}, Adopt: true}}
	s, err := schainfiler.New(cfg, other)
	require.NoError(err)
	t.Cleanup(s.Close)
	err = s.Put(ctx, "/d", "f", []byte("e"), fc(1, 2, 3, 5), false)
	require.ErrorIs(err, schainfiler.ErrTooManyChunks, "5 is bound now and not among the first three: refused, not released")
	require.Equal([]schainfiler.Chunk{{Range: "weed/keys/0", ID: 2}}, c.released, "only what the other write dropped")
	r, err := c.Get(ctx, "weed", schainfiler.Key("/d", "f"))
	require.NoError(err)
	require.Equal([]schainfiler.Chunk{chunk(1), chunk(5)}, r.Chunks)
}
