package certifier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ava-labs/avalanchego/database"

	"github.com/s-chain/schain/certificate"
)

// Saving certificates. A write to the chain's database crosses the plugin's
// gRPC link to the node: one per certificate was about a tenth of what
// certificates cost (docs/internals/performance-log.md). So a certificate waits in memory
// until saveAfter has passed since the oldest waiting one, or maxUnsaved
// wait, and then all of them are written in one batch. A crash loses the
// waiting ones: a certificate only proves what the validators signed, so
// losing this node's copy loses no finality, and after a restart the
// certificate of a newer block covers the blocks they covered.
const (
	saveAfter  = 500 * time.Millisecond
	maxUnsaved = 32
	maxKept    = 4 * maxUnsaved
)

// store keeps certificates by height in the chain's database (a prefixed
// part of it), and the height of the newest one:
//
//	'c' | u64 height -> certificate bytes
//	'l'              -> u64 newest certified height
//
// and the newest ones in memory until they are saved.
type store struct {
	db database.Database

	mu sync.Mutex // guards unsaved and since
	// unsaved are certificates not written yet, oldest first; every one is
	// above every saved one (certified heights only grow).
	unsaved []*certificate.Certificate
	since   time.Time // when the oldest unsaved one was added
}

var lastKey = []byte{'l'}

func certKey(h uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'c'}, h) }

// add keeps c to be saved with the next batch, and saves at once when
// maxUnsaved wait. While writes fail, at most maxKept wait: the oldest are
// dropped, covered by the newer ones.
func (s *store) add(c *certificate.Certificate, now time.Time) error {
	s.mu.Lock()
	if len(s.unsaved) == 0 {
		s.since = now
	}
	s.unsaved = append(s.unsaved, c)
	if len(s.unsaved) > maxKept {
		s.unsaved = slices.Delete(s.unsaved, 0, len(s.unsaved)-maxKept)
	}
	full := len(s.unsaved) >= maxUnsaved
	s.mu.Unlock()
	if full {
		return s.save(now)
	}
	return nil
}

// saveDue is when the waiting certificates must be saved (ok: some wait).
func (s *store) saveDue() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since.Add(saveAfter), len(s.unsaved) > 0
}

// save writes the waiting certificates and the newest height in one
// batch. They stay readable from memory until the write is done, so a
// reader finds each of them in one place or the other throughout. Only
// the certifier's background goroutine saves (and New, Stop after it).
func (s *store) save(now time.Time) error {
	s.mu.Lock()
	waiting := slices.Clone(s.unsaved)
	s.mu.Unlock()
	if len(waiting) == 0 {
		return nil
	}
	if err := s.write(waiting); err != nil {
		s.mu.Lock()
		s.since = now // tried again saveAfter from now, not at once
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	s.unsaved = slices.Delete(s.unsaved, 0, len(waiting))
	s.mu.Unlock()
	return nil
}

func (s *store) write(certs []*certificate.Certificate) error {
	b := s.db.NewBatch()
	for _, c := range certs {
		if err := b.Put(certKey(c.Height), c.Bytes()); err != nil {
			return err
		}
	}
	if err := b.Put(lastKey, binary.BigEndian.AppendUint64(nil, certs[len(certs)-1].Height)); err != nil {
		return err
	}
	return b.Write()
}

// last is the newest saved height (0: none yet).
func (s *store) last() (uint64, error) {
	v, err := s.db.Get(lastKey)
	if errors.Is(err, database.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("certifier: corrupt newest height record (%d bytes)", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// covering is the lowest certificate at or above h, saved or waiting, or
// database.ErrNotFound.
func (s *store) covering(h uint64) (*certificate.Certificate, error) {
	// The waiting ones are read first: a save moves them to the database
	// before it drops them from memory, never after.
	s.mu.Lock()
	var waiting *certificate.Certificate
	if i := slices.IndexFunc(s.unsaved, func(c *certificate.Certificate) bool { return c.Height >= h }); i >= 0 {
		waiting = s.unsaved[i]
	}
	s.mu.Unlock()
	saved, err := s.saved(h)
	switch {
	case err == nil:
		return saved, nil // every saved one is below every waiting one
	case errors.Is(err, database.ErrNotFound) && waiting != nil:
		return waiting, nil
	default:
		return nil, err
	}
}

// saved is the lowest saved certificate at or above h.
func (s *store) saved(h uint64) (*certificate.Certificate, error) {
	it := s.db.NewIteratorWithStartAndPrefix(certKey(h), []byte{'c'})
	defer it.Release()
	if !it.Next() {
		if err := it.Error(); err != nil {
			return nil, err
		}
		return nil, database.ErrNotFound
	}
	return certificate.Parse(it.Value())
}
