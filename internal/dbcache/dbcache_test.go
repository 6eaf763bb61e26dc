package dbcache

import (
	"container/list"
	"fmt"
	"sync"
	"testing"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/database/dbtest"
	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/database/versiondb"
	"github.com/stretchr/testify/require"
)

// TestDatabaseContract runs avalanchego's database conformance tests on the
// cache, with a bound small enough that eviction happens.
func TestDatabaseContract(t *testing.T) {
	for name, test := range dbtest.Tests {
		t.Run(name, func(t *testing.T) {
			test(t, New(memdb.New(), 4))
		})
	}
}

// TestCacheFollowsEveryWrite: cached values and cached absences change
// with puts, deletes and batches (versiondb commits, as state layers do),
// and the cache answers repeated reads without the database.
func TestCacheFollowsEveryWrite(t *testing.T) {
	require := require.New(t)
	under := memdb.New()
	d := New(under, 16)
	_, err := d.Get([]byte("k"))
	require.ErrorIs(err, database.ErrNotFound)

	require.NoError(under.Put([]byte("k"), []byte("behind its back"))) // never done in use
	_, err = d.Get([]byte("k"))
	require.ErrorIs(err, database.ErrNotFound, "the absence was served from memory")

	v := versiondb.New(d)
	require.NoError(v.Put([]byte("k"), []byte("v1")))
	require.NoError(v.Put([]byte("gone"), []byte("x")))
	require.NoError(v.Commit())
	got, err := d.Get([]byte("k"))
	require.NoError(err)
	require.Equal([]byte("v1"), got, "a batch write replaced the cached absence")

	require.NoError(v.Delete([]byte("gone")))
	require.NoError(v.Commit())
	has, err := d.Has([]byte("gone"))
	require.NoError(err)
	require.False(has)

	val := []byte("v2")
	require.NoError(d.Put([]byte("k"), val))
	val[0] = 'X'
	got, err = d.Get([]byte("k"))
	require.NoError(err)
	require.Equal([]byte("v2"), got, "a put's value is copied")

	big := make([]byte, MaxValueBytes+1)
	require.NoError(d.Put([]byte("k"), big))
	got, err = d.Get([]byte("k"))
	require.NoError(err)
	require.Len(got, MaxValueBytes+1, "a large value replaces the cached one (and is not kept)")
	d.mu.Lock()
	_, cached := d.entries["k"]
	d.mu.Unlock()
	require.False(cached)
}

// TestRacingReadDoesNotCache: a read that started before a write and
// finished after it must not leave its (old) answer in the cache.
func TestRacingReadDoesNotCache(t *testing.T) {
	require := require.New(t)
	d := New(memdb.New(), 16)
	d.mu.Lock()
	gen := d.writes
	d.mu.Unlock()
	require.NoError(d.Put([]byte("k"), []byte("new")))
	d.mu.Lock()
	if d.writes == gen { // what Get checks before caching what it read
		d.set("k", []byte("old"), true)
	}
	d.mu.Unlock()
	got, err := d.Get([]byte("k"))
	require.NoError(err)
	require.Equal([]byte("new"), got)
}

// TestConcurrentReadsAndWrites: readers of a cached key and a writer that
// rewrites it (in batches, as Accept does) share the cache safely (run
// with -race), and once the writes are done every read sees the last one.
func TestConcurrentReadsAndWrites(t *testing.T) {
	d := New(memdb.New(), 8)
	key := []byte("k")
	require.NoError(t, d.Put(key, []byte{0}))
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				v, err := d.Get(key)
				if err != nil || len(v) != 1 {
					t.Errorf("read %v, %v", v, err)
					return
				}
			}
		}()
	}
	for i := 1; i <= 5000; i++ {
		b := d.NewBatch()
		require.NoError(t, b.Put(key, []byte{byte(i)}))
		require.NoError(t, b.Write())
	}
	close(done)
	readers.Wait()
	v, err := d.Get(key)
	require.NoError(t, err)
	require.Equal(t, []byte{byte(5000 % 256)}, v)
}

// countingDB counts the reads that reach the database (in a plugin, gRPC
// round trips into the node).
type countingDB struct {
	database.Database
	mu        sync.Mutex
	has, gets int
}

func (c *countingDB) Has(key []byte) (bool, error) {
	c.mu.Lock()
	c.has++
	c.mu.Unlock()
	return c.Database.Has(key)
}

func (c *countingDB) Get(key []byte) ([]byte, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Database.Get(key)
}

// TestHasRemembersAbsence: asking again whether a new transaction was
// applied is answered from memory, until a write makes it present; a
// present key is asked of the database each time (Has knows no value), and
// a Has that raced with a write leaves nothing behind.
func TestHasRemembersAbsence(t *testing.T) {
	require := require.New(t)
	under := &countingDB{Database: memdb.New()}
	d := New(under, 16)
	for range 3 {
		has, err := d.Has([]byte("applied/tx1"))
		require.NoError(err)
		require.False(has)
	}
	require.Equal(1, under.has, "one read of the database, then memory")
	_, err := d.Get([]byte("applied/tx1"))
	require.ErrorIs(err, database.ErrNotFound)
	require.Zero(under.gets, "Get knows the absence too")

	v := versiondb.New(d)
	require.NoError(v.Put([]byte("applied/tx1"), []byte{1}))
	require.NoError(v.Commit())
	has, err := d.Has([]byte("applied/tx1"))
	require.NoError(err)
	require.True(has, "the accepted write replaced the cached absence")

	require.NoError(under.Database.Put([]byte("present"), []byte("v"))) // written before this cache
	for range 2 {
		has, err := d.Has([]byte("present"))
		require.NoError(err)
		require.True(has)
	}
	require.Equal(3, under.has, "a present key is not cached by Has")
	got, err := d.Get([]byte("present"))
	require.NoError(err)
	require.Equal([]byte("v"), got)

	// A Has racing with a write: the write bumps the generation, and the
	// absence read before it is not kept.
	d.mu.Lock()
	gen := d.writes
	d.mu.Unlock()
	require.NoError(d.Put([]byte("raced"), []byte("now")))
	d.mu.Lock()
	if d.writes == gen { // what Has checks before caching an absence
		d.set("raced", nil, false)
	}
	d.mu.Unlock()
	has, err = d.Has([]byte("raced"))
	require.NoError(err)
	require.True(has)
}

// TestDatabaseContractTracked: the conformance tests with every key
// tracked (the empty prefix).
func TestDatabaseContractTracked(t *testing.T) {
	for name, test := range dbtest.Tests {
		t.Run(name, func(t *testing.T) {
			d := New(memdb.New(), 4)
			_, err := d.Track([]byte{})()
			require.NoError(t, err)
			test(t, d)
		})
	}
}

// TestTrackedKeysAnswerAbsence: under a tracked prefix a key the database
// never held is answered absent without a read, whatever the cache's
// bound; keys that existed before Track, and keys written since by a put
// or a batch (a versiondb commit, as Accept makes), are read; other
// prefixes are not affected.
func TestTrackedKeysAnswerAbsence(t *testing.T) {
	require := require.New(t)
	under := &countingDB{Database: memdb.New()}
	require.NoError(under.Database.Put([]byte("o/old"), []byte("before")))
	d := New(under, 1) // a bound of one: nothing below is answered by the LRU
	scan := d.Track([]byte("o/"), []byte("k/"))
	require.NoError(d.Put([]byte("o/during"), []byte("written before the scan ends")))
	_, err := d.Get([]byte("o/absent"))
	require.ErrorIs(err, database.ErrNotFound)
	require.Equal(1, under.gets, "before the scan, reads go to the database")
	n, err := scan()
	require.NoError(err)
	require.Equal(2, n, "the keys that existed")
	under.gets = 0
	for _, k := range []string{"o/old", "o/during"} {
		d.mu.Lock()
		d.entries, d.lru = map[string]*list.Element{}, list.New()
		d.mu.Unlock()
		_, err := d.Get([]byte(k))
		require.NoError(err, "%s: found after the scan", k)
	}
	under.gets = 0

	for i := range 1000 {
		_, err = d.Get([]byte(fmt.Sprintf("o/new%d", i)))
		require.ErrorIs(err, database.ErrNotFound)
		has, err := d.Has([]byte(fmt.Sprintf("k/new%d", i)))
		require.NoError(err)
		require.False(has)
	}
	require.Less(under.gets+under.has, 50, "about 1%% false positives go to the database")

	got, err := d.Get([]byte("o/old"))
	require.NoError(err, "a key that existed before Track")
	require.Equal([]byte("before"), got)

	require.NoError(d.Put([]byte("o/put"), []byte("p")))
	v := versiondb.New(d)
	require.NoError(v.Put([]byte("k/batched"), []byte("b")))
	require.NoError(v.Commit())
	for _, k := range []string{"o/put", "k/batched"} {
		d.mu.Lock()
		d.entries, d.lru = map[string]*list.Element{}, list.New() // forget the values: the database must answer
		d.mu.Unlock()
		got, err := d.Get([]byte(k))
		require.NoError(err, k)
		require.NotEmpty(got)
	}

	// A key written behind the cache's back under a tracked prefix is not
	// seen (never done in use: the cache must be the only writer); under
	// another prefix it is.
	require.NoError(under.Database.Put([]byte("o/behind"), []byte("x")))
	require.NoError(under.Database.Put([]byte("other/behind"), []byte("x")))
	_, err = d.Get([]byte("o/behind"))
	require.ErrorIs(err, database.ErrNotFound)
	_, err = d.Get([]byte("other/behind"))
	require.NoError(err)

	require.NoError(d.Close())
	_, err = d.Get([]byte("o/never"))
	require.ErrorIs(err, database.ErrClosed, "after Close every call goes to the database")
}

// TestFilterGrows: past its capacity the filter adds a larger part and
// still holds every key it was given, with few false positives.
func TestFilterGrows(t *testing.T) {
	require := require.New(t)
	f := newFilter(0)
	const n = 300_000
	for i := range n {
		f.add([]byte(fmt.Sprintf("key%d", i)))
	}
	require.Greater(len(f.parts), 1)
	for i := range n {
		require.True(f.mayHold([]byte(fmt.Sprintf("key%d", i))))
	}
	fp := 0
	for i := range 100_000 {
		if f.mayHold([]byte(fmt.Sprintf("absent%d", i))) {
			fp++
		}
	}
	require.Less(fp, 5_000, "false positives of 100,000 absent keys")
}

// TestScanWhileWriting: keys written while the scan runs (a VM starts
// deciding blocks before it finished) and keys that existed before are all
// found once it is done (run with -race).
func TestScanWhileWriting(t *testing.T) {
	require := require.New(t)
	under := memdb.New()
	for i := range 2000 {
		require.NoError(under.Put([]byte(fmt.Sprintf("o/old%d", i)), []byte{1}))
	}
	d := New(under, 1)
	scan := d.Track([]byte("o/"))
	done := make(chan error)
	go func() {
		_, err := scan()
		done <- err
	}()
	for i := range 2000 {
		require.NoError(d.Put([]byte(fmt.Sprintf("o/new%d", i)), []byte{2}))
	}
	require.NoError(<-done)
	for i := range 2000 {
		for _, k := range []string{fmt.Sprintf("o/old%d", i), fmt.Sprintf("o/new%d", i)} {
			has, err := d.Has([]byte(k))
			require.NoError(err)
			require.True(has, k)
		}
	}
}
