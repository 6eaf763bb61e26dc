package txs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
)

// CodecVersion is the only wire version this code reads and writes. A new
// version gets a new number; existing numbers never change meaning.
const CodecVersion uint16 = 1

const (
	headerLen = 2 + 1 + 4 + 32 + 8 + 32 + 20 + 4
	sigLen    = bls.SignatureLen
)

type writer struct{ b []byte }

func (w *writer) u8(v byte)    { w.b = append(w.b, v) }
func (w *writer) u16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *writer) raw(v []byte) { w.b = append(w.b, v...) }
func (w *writer) str(s string) { w.u16(uint16(len(s))); w.b = append(w.b, s...) }
func (w *writer) boolean(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = ErrTruncated
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

func (r *reader) u8() byte {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (r *reader) id() (v ids.ID) {
	copy(v[:], r.take(32))
	return v
}

func (r *reader) str() string { return string(r.take(int(r.u16()))) }

func (r *reader) boolean() bool {
	switch r.u8() {
	case 0:
		return false
	case 1:
		return true
	default:
		if r.err == nil {
			r.err = ErrBadBool
		}
		return false
	}
}

func encodeUnsigned(u Unsigned) []byte {
	h := u.Head()
	w := &writer{b: make([]byte, 0, 256)}
	w.u16(CodecVersion)
	w.u8(u.kind())
	w.u32(h.NetworkID)
	w.raw(h.ChainID[:])
	w.u64(h.Epoch)
	w.raw(h.Fingerprint[:])
	w.raw(h.Owner[:])
	w.u32(uint32(u.entries()))
	u.encodeEntries(w)
	return w.b
}

func (t *AllocateTx) encodeEntries(w *writer) {
	for _, e := range t.Entries {
		w.str(e.Range)
		w.u64(e.Count)
		w.u64(e.Floor)
	}
}

func (t *PutManifestTx) encodeEntries(w *writer) {
	for _, m := range t.Entries {
		w.str(m.Bucket)
		w.str(m.Key)
		w.u64(m.Size)
		w.raw(m.ContentHash[:])
		w.boolean(m.Deleted)
		w.u16(uint16(len(m.Chunks)))
		for _, c := range m.Chunks {
			w.str(c.Range)
			w.u64(c.ID)
			w.u64(c.Size)
			w.raw(c.Hash[:])
		}
	}
}

// Parse decodes and statelessly verifies a transaction. It accepts b only if
// it is the canonical encoding of the result, so every accepted transaction
// has exactly one byte string and one ID. It never panics on any input.
func Parse(b []byte, l Limits) (*Tx, error) {
	if len(b) > l.MaxTxBytes {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(b), l.MaxTxBytes)
	}
	b = slices.Clone(b) // the Tx keeps its bytes; the caller keeps its buffer
	r := &reader{b: b}
	if v := r.u16(); r.err == nil && v != CodecVersion {
		return nil, fmt.Errorf("%w: %d", ErrUnknownVersion, v)
	}
	kind := r.u8()
	var h Header
	h.NetworkID = r.u32()
	h.ChainID = r.id()
	h.Epoch = r.u64()
	h.Fingerprint = r.id()
	copy(h.Owner[:], r.take(ids.NodeIDLen))
	n := r.u32()
	if r.err != nil {
		return nil, r.err
	}
	if n == 0 {
		return nil, ErrNoEntries
	}
	if n > uint32(l.MaxEntries) {
		return nil, fmt.Errorf("%w: %d > %d", ErrTooManyEntries, n, l.MaxEntries)
	}
	var u Unsigned
	switch kind {
	case kindAllocate:
		u = decodeAllocate(r, h, int(n))
	case kindPutManifest:
		u = decodePutManifest(r, h, int(n), l)
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownKind, kind)
	}
	unsignedEnd := r.off
	sig := r.take(sigLen)
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%w: %d", ErrTrailingBytes, len(b)-r.off)
	}
	if err := u.verifyEntries(l); err != nil {
		return nil, err
	}
	unsigned := encodeUnsigned(u)
	if !bytes.Equal(unsigned, b[:unsignedEnd]) {
		// Unreachable with the fixed-width format above; kept as the
		// definition of canonical.
		return nil, ErrNotCanonical
	}
	tx := &Tx{Unsigned: u}
	copy(tx.Signature[:], sig)
	tx.initialize(b[:unsignedEnd:unsignedEnd], b)
	return tx, nil
}

func decodeAllocate(r *reader, h Header, n int) *AllocateTx {
	t := &AllocateTx{Header: h, Entries: make([]AllocateEntry, 0, min(n, 1024))}
	for i := 0; i < n && r.err == nil; i++ {
		t.Entries = append(t.Entries, AllocateEntry{Range: r.str(), Count: r.u64(), Floor: r.u64()})
	}
	return t
}

func decodePutManifest(r *reader, h Header, n int, l Limits) *PutManifestTx {
	t := &PutManifestTx{Header: h, Entries: make([]Manifest, 0, min(n, 256))}
	for i := 0; i < n && r.err == nil; i++ {
		m := Manifest{Bucket: r.str(), Key: r.str(), Size: r.u64(), ContentHash: r.id(), Deleted: r.boolean()}
		nc := int(r.u16())
		if nc > l.MaxChunks && r.err == nil {
			r.err = fmt.Errorf("%w: %d > %d", ErrTooManyChunks, nc, l.MaxChunks)
		}
		if nc > 0 {
			m.Chunks = make([]Chunk, 0, min(nc, 256))
		}
		for j := 0; j < nc && r.err == nil; j++ {
			m.Chunks = append(m.Chunks, Chunk{Range: r.str(), ID: r.u64(), Size: r.u64(), Hash: r.id()})
		}
		t.Entries = append(t.Entries, m)
	}
	return t
}
