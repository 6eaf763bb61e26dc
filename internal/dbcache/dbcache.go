// Package dbcache keeps recently read and written keys of a database in
// memory, absent keys included.
//
// A VM plugin's database is the node's, reached over gRPC: every read of
// accepted state that Verify, block building and admission make (range
// counters, the replay index, receipts) is a round trip into another
// process, which on a loaded node costs more than the execution itself and
// holds the engine's handler while it waits. The cache answers repeated
// reads from memory and stays exact, because every write of the database
// goes through it: a Put, a Delete or a batch's Write updates the cache
// once the database has it, and a read that raced with a write never
// caches what it read. Iterators read the database itself.
//
// Under the prefixes it tracks (Track), the cache also knows which keys
// exist: a read of a key never written there is answered absent from
// memory.
package dbcache

import (
	"bytes"
	"container/list"
	"errors"
	"slices"
	"sync"

	"github.com/ava-labs/avalanchego/database"
)

// MaxValueBytes is the largest value the cache keeps: blocks are read by
// their own paths (and rarely twice); the keys worth caching are small.
const MaxValueBytes = 4 << 10

// DB is a database.Database whose Get and Has are served from memory when
// they can. It must be the only writer of the database it wraps.
type DB struct {
	database.Database
	max int

	mu      sync.Mutex // guards the fields below
	entries map[string]*list.Element
	lru     *list.List // front: most recently used *entry
	writes  uint64     // bumped by every write, so a racing read does not cache
	closed  bool       // after Close every call goes to the database (ErrClosed)
	tracked [][]byte   // prefixes whose every key written since Track keys holds
	keys    *filter
	scanned bool // keys holds every key of the tracked prefixes too
}

type entry struct {
	key   string
	value []byte // nil with found false: the key is absent
	found bool
}

// New wraps db with a cache of at most maxEntries keys.
func New(db database.Database, maxEntries int) *DB {
	return &DB{Database: db, max: max(maxEntries, 1), entries: map[string]*list.Element{}, lru: list.New()}
}

// Track makes the cache know which keys exist under each prefix: from now
// on it records every key written under them, and scan reads those that
// exist already. Once scan has read them all, a read of a key never seen
// there is answered absent without asking the database (a new object's
// keys: every block that writes one reads them first, on every validator,
// and each would be a round trip into the node); until then reads go to
// the database. Track must be called before the database is used; scan
// may run meanwhile (a large state takes a while to read), and returns
// how many keys it read. Without a completed scan nothing changes.
func (d *DB) Track(prefixes ...[]byte) (scan func() (int, error)) {
	d.mu.Lock()
	d.keys, d.scanned, d.tracked = newFilter(0), false, nil
	for _, p := range prefixes {
		d.tracked = append(d.tracked, slices.Clone(p))
	}
	keys := d.keys
	d.mu.Unlock()
	return func() (int, error) {
		n := 0
		for _, p := range prefixes {
			it := d.Database.NewIteratorWithPrefix(p)
			for it.Next() {
				d.mu.Lock()
				keys.add(it.Key())
				d.mu.Unlock()
				n++
			}
			err := it.Error()
			it.Release()
			if err != nil {
				return n, err
			}
		}
		d.mu.Lock()
		d.scanned = d.keys == keys // not tracked anew meanwhile
		d.mu.Unlock()
		return n, nil
	}
}

// isTracked reports whether key is under a tracked prefix. Called with
// d.mu held.
func (d *DB) isTracked(key []byte) bool {
	for _, p := range d.tracked {
		if bytes.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// knownAbsent reports whether key was never written under a tracked
// prefix. Called with d.mu held.
func (d *DB) knownAbsent(key []byte) bool {
	return d.scanned && !d.closed && d.isTracked(key) && !d.keys.mayHold(key)
}

// note records that key is about to be written, before the database has
// it, so that no read after the write finds it absent. Called with d.mu
// held.
func (d *DB) note(key []byte) {
	if d.keys != nil && d.isTracked(key) {
		d.keys.add(key)
	}
}

// Get serves key from memory, or reads it and remembers the answer
// (ErrNotFound too) unless a write happened meanwhile.
func (d *DB) Get(key []byte) ([]byte, error) {
	d.mu.Lock()
	if el, ok := d.entries[string(key)]; ok && !d.closed {
		d.lru.MoveToFront(el)
		e := el.Value.(*entry)
		value, found := e.value, e.found // set rewrites entries in place
		d.mu.Unlock()
		if !found {
			return nil, database.ErrNotFound
		}
		return value, nil
	}
	if d.knownAbsent(key) {
		d.mu.Unlock()
		return nil, database.ErrNotFound
	}
	gen := d.writes
	d.mu.Unlock()
	v, err := d.Database.Get(key)
	found := err == nil
	if err != nil && !errors.Is(err, database.ErrNotFound) {
		return nil, err
	}
	d.mu.Lock()
	if d.writes == gen {
		d.set(string(key), v, found)
	}
	d.mu.Unlock()
	return v, err
}

// Has answers from memory when the key is cached, and remembers an absent
// key (unless a write happened meanwhile): the replay check asks whether a
// new transaction was applied at admission, at every build and at every
// verify, and the answer is no until a block that applies it is accepted
// (a write through the cache). A present key is not kept: Has does not read
// its value.
func (d *DB) Has(key []byte) (bool, error) {
	d.mu.Lock()
	if el, ok := d.entries[string(key)]; ok && !d.closed {
		found := el.Value.(*entry).found
		d.mu.Unlock()
		return found, nil
	}
	if d.knownAbsent(key) {
		d.mu.Unlock()
		return false, nil
	}
	gen := d.writes
	d.mu.Unlock()
	has, err := d.Database.Has(key)
	if err != nil || has {
		return has, err
	}
	d.mu.Lock()
	if d.writes == gen {
		d.set(string(key), nil, false)
	}
	d.mu.Unlock()
	return false, nil
}

// Put writes through.
func (d *DB) Put(key, value []byte) error {
	d.mu.Lock()
	d.note(key)
	d.mu.Unlock()
	if err := d.Database.Put(key, value); err != nil {
		d.forget(key)
		return err
	}
	d.mu.Lock()
	d.writes++
	d.set(string(key), slices.Clone(value), true)
	d.mu.Unlock()
	return nil
}

// Delete writes through.
func (d *DB) Delete(key []byte) error {
	if err := d.Database.Delete(key); err != nil {
		d.forget(key)
		return err
	}
	d.mu.Lock()
	d.writes++
	d.set(string(key), nil, false)
	d.mu.Unlock()
	return nil
}

// Close closes the database and empties the cache.
func (d *DB) Close() error {
	err := d.Database.Close()
	d.mu.Lock()
	d.closed, d.writes = true, d.writes+1
	d.entries, d.lru = map[string]*list.Element{}, list.New()
	d.mu.Unlock()
	return err
}

// NewBatch returns a batch whose Write also updates the cache.
func (d *DB) NewBatch() database.Batch {
	return &batch{Batch: d.Database.NewBatch(), db: d}
}

func (d *DB) forget(key []byte) {
	d.mu.Lock()
	d.writes++
	if el, ok := d.entries[string(key)]; ok {
		d.lru.Remove(el)
		delete(d.entries, string(key))
	}
	d.mu.Unlock()
}

// set records key's value. Called with d.mu held.
func (d *DB) set(key string, value []byte, found bool) {
	if el, ok := d.entries[key]; ok {
		if len(value) > MaxValueBytes {
			d.lru.Remove(el)
			delete(d.entries, key)
			return
		}
		e := el.Value.(*entry)
		e.value, e.found = value, found
		d.lru.MoveToFront(el)
		return
	}
	if len(value) > MaxValueBytes {
		return
	}
	d.entries[key] = d.lru.PushFront(&entry{key: key, value: value, found: found})
	for d.lru.Len() > d.max {
		old := d.lru.Back()
		d.lru.Remove(old)
		delete(d.entries, old.Value.(*entry).key)
	}
}

type op struct {
	key    string
	value  []byte
	delete bool
}

// batch records its writes so that Write can apply them to the cache.
type batch struct {
	database.Batch
	db  *DB
	ops []op
}

func (b *batch) Put(key, value []byte) error {
	if err := b.Batch.Put(key, value); err != nil {
		return err
	}
	b.ops = append(b.ops, op{key: string(key), value: slices.Clone(value)})
	return nil
}

func (b *batch) Delete(key []byte) error {
	if err := b.Batch.Delete(key); err != nil {
		return err
	}
	b.ops = append(b.ops, op{key: string(key), delete: true})
	return nil
}

// Write commits the batch, then applies it to the cache; on failure the
// batch's keys are forgotten, since the database may hold either value.
func (b *batch) Write() error {
	b.db.mu.Lock()
	for _, o := range b.ops {
		if !o.delete {
			b.db.note([]byte(o.key))
		}
	}
	b.db.mu.Unlock()
	err := b.Batch.Write()
	b.db.mu.Lock()
	defer b.db.mu.Unlock()
	b.db.writes++
	for _, o := range b.ops {
		switch {
		case err != nil:
			if el, ok := b.db.entries[o.key]; ok {
				b.db.lru.Remove(el)
				delete(b.db.entries, o.key)
			}
		case o.delete:
			b.db.set(o.key, nil, false)
		default:
			b.db.set(o.key, o.value, true)
		}
	}
	return err
}

func (b *batch) Reset() {
	b.Batch.Reset()
	b.ops = b.ops[:0]
}

// Inner is the batch itself: writes through Inner must reach the cache too.
func (b *batch) Inner() database.Batch { return b }
