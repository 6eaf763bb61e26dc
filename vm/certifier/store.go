package certifier

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/database"

	"github.com/s-chain/schain/certificate"
)

// store keeps certificates by height in the chain's database (a prefixed
// part of it), and the height of the newest one.
//
//	'c' | u64 height -> certificate bytes
//	'l'              -> u64 newest certified height
type store struct{ db database.Database }

var lastKey = []byte{'l'}

func certKey(h uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'c'}, h) }

// put stores c and makes it the newest, in one batch.
func (s store) put(c *certificate.Certificate) error {
	b := s.db.NewBatch()
	if err := b.Put(certKey(c.Height), c.Bytes()); err != nil {
		return err
	}
	if err := b.Put(lastKey, binary.BigEndian.AppendUint64(nil, c.Height)); err != nil {
		return err
	}
	return b.Write()
}

// last is the newest certified height (0: none yet).
func (s store) last() (uint64, error) {
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

// covering is the lowest certificate at or above h, or database.ErrNotFound.
func (s store) covering(h uint64) (*certificate.Certificate, error) {
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
