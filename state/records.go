package state

import (
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/internal/wire"
)

// Receipt records what an applied transaction did, entry by entry, so a
// client can learn its ids from any node after Accept.
type Receipt struct {
	TxID    ids.ID         `json:"txID"`
	Height  uint64         `json:"height"`
	Kind    string         `json:"kind"`
	Entries []ReceiptEntry `json:"entries"`
}

// ReceiptEntry is one entry's outcome: the ids reserved by an allocate entry
// ([Base, Base+Count) in Range), or the object a manifest entry wrote.
type ReceiptEntry struct {
	Range   string `json:"range,omitempty"`
	Base    uint64 `json:"base,omitempty"`
	Count   uint64 `json:"count,omitempty"`
	Bucket  string `json:"bucket,omitempty"`
	Key     string `json:"key,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

const receiptVersion byte = 1

func encodeReceipt(r *Receipt) ([]byte, error) {
	w := &wire.Writer{}
	w.U8(receiptVersion)
	w.Raw(r.TxID[:])
	w.U64(r.Height)
	w.Str(r.Kind)
	w.U32(uint32(len(r.Entries)))
	for _, e := range r.Entries {
		w.Str(e.Range)
		w.U64(e.Base)
		w.U64(e.Count)
		w.Str(e.Bucket)
		w.Str(e.Key)
		w.Bool(e.Deleted)
	}
	return w.B, w.Err
}

func decodeReceipt(b []byte) (*Receipt, error) {
	r := &wire.Reader{B: b}
	if v := r.U8(); r.Err == nil && v != receiptVersion {
		return nil, fmt.Errorf("%w: receipt version %d", ErrCorrupt, v)
	}
	rc := &Receipt{}
	r.Fixed(rc.TxID[:])
	rc.Height = r.U64()
	rc.Kind = r.Str()
	n := r.U32()
	for i := uint32(0); i < n && r.Err == nil; i++ {
		rc.Entries = append(rc.Entries, ReceiptEntry{
			Range: r.Str(), Base: r.U64(), Count: r.U64(),
			Bucket: r.Str(), Key: r.Str(), Deleted: r.Bool(),
		})
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("%w: receipt: %w", ErrCorrupt, err)
	}
	return rc, nil
}

// Accepted is the last accepted block as the database records it.
type Accepted struct {
	ID     ids.ID
	Height uint64
	Root   ids.ID
}

func encodeAccepted(a Accepted) []byte {
	w := &wire.Writer{}
	w.Raw(a.ID[:])
	w.U64(a.Height)
	w.Raw(a.Root[:])
	return w.B
}

func decodeAccepted(b []byte) (Accepted, error) {
	var a Accepted
	r := &wire.Reader{B: b}
	r.Fixed(a.ID[:])
	a.Height = r.U64()
	r.Fixed(a.Root[:])
	if err := r.Done(); err != nil {
		return Accepted{}, fmt.Errorf("%w: last-accepted record: %w", ErrCorrupt, err)
	}
	return a, nil
}
