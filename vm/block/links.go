package block

import (
	"crypto/sha256"
	"errors"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/internal/wire"
)

// Links is what a client that trusts no node reads from a block's bytes:
// its ID (the hash of the bytes), its parent, height and state root, and
// the IDs of its transactions (each the hash of the transaction's bytes).
// Walking parents from a certified block down to a receipt's block proves
// that the certificate covers the receipt, without the chain's limits.
type Links struct {
	ID        ids.ID
	Parent    ids.ID
	Height    uint64
	StateRoot ids.ID
	TxIDs     []ids.ID
	// HasPChainHeight and PChainHeight are the block's P-chain context.
	HasPChainHeight bool
	PChainHeight    uint64
}

// ReadLinks reads a block's links from its encoding.
func ReadLinks(b []byte) (Links, error) {
	r := &wire.Reader{B: b}
	if v := r.U16(); r.Err == nil && v != Version {
		return Links{}, ErrUnknownVersion
	}
	l := Links{ID: sha256.Sum256(b)}
	r.Fixed(l.Parent[:])
	l.Height = r.U64()
	r.U64() // timestamp
	l.HasPChainHeight = r.Bool()
	l.PChainHeight = r.U64()
	r.Fixed(l.StateRoot[:])
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		tx := r.Take(int(r.U32()))
		if r.Err == nil {
			l.TxIDs = append(l.TxIDs, sha256.Sum256(tx))
		}
	}
	if err := r.Done(); err != nil {
		if errors.Is(err, wire.ErrTrailing) {
			return Links{}, ErrTrailingBytes
		}
		return Links{}, err
	}
	return l, nil
}
