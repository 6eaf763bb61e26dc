package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/ava-labs/avalanchego/database"
	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
)

// ErrBadQuery refuses a listing without a bound.
var ErrBadQuery = errors.New("state: a listing needs a limit and a scan limit of at least 1")

// ObjectQuery asks for one page of a bucket's live objects in key order.
type ObjectQuery struct {
	Bucket string
	// Prefix: only keys that start with it.
	Prefix string
	// StartAfter: only keys after it. A common prefix (what a page's Next
	// is when its last entry was one) continues after every key under it.
	StartAfter string
	// Delimiter, if set, rolls the keys that contain it after Prefix up
	// into one common prefix each (Prefix up to and including the first
	// Delimiter), as S3's ListObjects does.
	Delimiter string
	// Limit bounds the objects and common prefixes of the page.
	Limit int
	// ScanLimit bounds the records the page reads, tombstones and keys
	// under a common prefix without a live object included, so that a
	// page costs a bounded amount however many deletions came before.
	ScanLimit int
}

// ObjectPage is one page of a listing.
type ObjectPage struct {
	Objects        []*Object
	CommonPrefixes []string
	// Truncated: more may follow; the next page starts after Next.
	Truncated bool
	Next      string
}

// ListObjects reads one page of live objects from accepted state.
func (s *State) ListObjects(q ObjectQuery) (*ObjectPage, error) {
	if q.Limit < 1 || q.ScanLimit < 1 {
		return nil, ErrBadQuery
	}
	l := lister{db: s.db, limits: s.limits, q: q}
	return l.run()
}

type lister struct {
	db     database.Iteratee
	limits txs.Limits
	q      ObjectQuery
	it     *mergedIterator
}

// under is the common prefix a key rolls up into, or "".
func (l *lister) under(key string) string {
	if l.q.Delimiter == "" || !strings.HasPrefix(key, l.q.Prefix) {
		return ""
	}
	i := strings.Index(key[len(l.q.Prefix):], l.q.Delimiter)
	if i < 0 {
		return ""
	}
	return key[:len(l.q.Prefix)+i+len(l.q.Delimiter)]
}

// seek restarts the scan at the first key at or after from.
func (l *lister) seek(from string) {
	if l.it != nil {
		l.it.release()
	}
	l.it = newMergedIterator(l.db, l.q.Bucket, l.q.Prefix, from)
}

func (l *lister) run() (*ObjectPage, error) {
	page := &ObjectPage{}
	from := l.q.Prefix
	if after := l.q.StartAfter; after >= from {
		from = after + "\x00"
		if cp := l.under(after); cp != "" && cp == after {
			if from = successor(after); from == "" {
				return page, nil // after every key
			}
		}
	}
	l.seek(from)
	defer func() { l.it.release() }()
	scanned, found := 0, 0
	for {
		key, value, legacy, ok := l.it.next()
		if !ok {
			return page, l.it.err()
		}
		if found == l.q.Limit || scanned == l.q.ScanLimit {
			page.Truncated = true
			return page, nil
		}
		scanned++
		o, err := decodeListed(value, legacy, l.limits)
		if err != nil {
			return nil, fmt.Errorf("listing %s: key %q: %w", l.q.Bucket, key, err)
		}
		page.Next = key
		if !o.Live() {
			continue
		}
		found++
		if cp := l.under(key); cp != "" {
			page.CommonPrefixes = append(page.CommonPrefixes, cp)
			page.Next = cp
			next := successor(cp)
			if next == "" {
				return page, nil
			}
			l.seek(next)
			continue
		}
		page.Objects = append(page.Objects, o)
	}
}

// successor is the first string after every string that starts with p, or
// "" if there is none (p is all 0xff).
func successor(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

func decodeListed(value []byte, legacy bool, l txs.Limits) (*Object, error) {
	if !legacy {
		return decodeObject(value, l)
	}
	m, err := txs.ParseManifest(value, l)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &Object{Manifest: *m}, nil
}

// mergedIterator walks one bucket's versioned objects and legacy manifests
// together in key order (an object is in one of the two tables).
type mergedIterator struct {
	its    [2]database.Iterator
	keys   [2][]byte
	ok     [2]bool
	prefix [2]int
}

func newMergedIterator(db database.Iteratee, bucket, prefix, from string) *mergedIterator {
	m := &mergedIterator{}
	for i, tag := range [2]byte{tagObject, tagManifest} {
		base := bucketKey(tag, bucket, "")
		m.prefix[i] = len(base)
		m.its[i] = db.NewIteratorWithStartAndPrefix(bucketKey(tag, bucket, from), bucketKey(tag, bucket, prefix))
		m.advance(i)
	}
	return m
}

func (m *mergedIterator) advance(i int) {
	m.ok[i] = m.its[i].Next()
	if m.ok[i] {
		m.keys[i] = m.its[i].Key()
	}
}

// next returns the smaller of the two current records and moves past it.
func (m *mergedIterator) next() (key string, value []byte, legacy bool, ok bool) {
	i := 0
	switch {
	case m.ok[0] && m.ok[1]:
		if bytes.Compare(m.keys[1][m.prefix[1]:], m.keys[0][m.prefix[0]:]) < 0 {
			i = 1
		}
	case m.ok[1]:
		i = 1
	case !m.ok[0]:
		return "", nil, false, false
	}
	key, value = string(m.keys[i][m.prefix[i]:]), bytes.Clone(m.its[i].Value())
	m.advance(i)
	return key, value, i == 1, true
}

func (m *mergedIterator) err() error {
	return errors.Join(m.its[0].Error(), m.its[1].Error())
}

func (m *mergedIterator) release() {
	m.its[0].Release()
	m.its[1].Release()
}

// ReleasedQuery asks for one page of a bucket's released list, in the
// order chunks were released.
type ReleasedQuery struct {
	Bucket string
	// After, if set, continues after this entry (the last of the previous
	// page).
	After *Released
	Limit int
}

// ReleasedPage is one page of a released list.
type ReleasedPage struct {
	Entries   []Released
	Truncated bool
}

// ListReleased reads one page of a bucket's released list from accepted
// state.
func (s *State) ListReleased(q ReleasedQuery) (*ReleasedPage, error) {
	if q.Limit < 1 {
		return nil, ErrBadQuery
	}
	prefix := bucketKey(tagReleased, q.Bucket, "")
	start := prefix
	if q.After != nil {
		start = append(releasedKey(q.Bucket, q.After.Height, q.After.Chunk.Ref()), 0)
	}
	it := s.db.NewIteratorWithStartAndPrefix(start, prefix)
	defer it.Release()
	page := &ReleasedPage{}
	for it.Next() {
		if len(page.Entries) == q.Limit {
			page.Truncated = true
			return page, nil
		}
		height, ref, ok := parseReleasedKey(it.Key(), len(prefix))
		v := it.Value()
		if !ok || len(v) != 8+len(ids.Empty) {
			return nil, fmt.Errorf("%w: released entry %x", ErrCorrupt, it.Key())
		}
		c := txs.Chunk{Range: ref.Range, ID: ref.ID, Size: binary.BigEndian.Uint64(v)}
		copy(c.Hash[:], v[8:])
		page.Entries = append(page.Entries, Released{Chunk: c, Height: height})
	}
	return page, it.Error()
}
