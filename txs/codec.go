package txs

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/ava-labs/avalanchego/utils/crypto/bls"

	"github.com/s-chain/schain/internal/wire"
)

// CodecVersion is the only wire version this code reads and writes. A new
// version gets a new number; existing numbers never change meaning.
const CodecVersion uint16 = 3

const (
	headerLen = 2 + 1 + 4 + 32 + 8 + 32 + 20 + 8 + 8 + 8 + 4
	sigLen    = bls.SignatureLen
)

func encodeUnsigned(u Unsigned) []byte { return appendUnsigned(make([]byte, 0, 256), u) }

// appendUnsigned appends u's canonical encoding to b: Parse encodes into a
// buffer of the size it expects, so that a large transaction is not
// copied through growing ones.
func appendUnsigned(b []byte, u Unsigned) []byte {
	h := u.Head()
	w := &wire.Writer{B: b}
	w.U16(CodecVersion)
	w.U8(u.kind())
	w.U32(h.NetworkID)
	w.Raw(h.ChainID[:])
	w.U64(h.PChainHeight)
	w.Raw(h.Fingerprint[:])
	w.Raw(h.Owner[:])
	w.U64(h.Nonce)
	w.U64(h.Round)
	w.U64(h.BlockHeight)
	w.U32(uint32(u.entries()))
	u.encodeEntries(w)
	return w.B
}

func (t *AllocateTx) encodeEntries(w *wire.Writer) {
	for _, e := range t.Entries {
		w.Str(e.Range)
		w.U64(e.Count)
		w.U64(e.Floor)
	}
}

func (t *PutManifestTx) encodeEntries(w *wire.Writer) {
	for i := range t.Entries {
		writeManifest(w, &t.Entries[i])
	}
}

func (*HeartbeatTx) encodeEntries(*wire.Writer) {}

func writeManifest(w *wire.Writer, m *Manifest) {
	w.Str(m.Bucket)
	w.Str(m.Key)
	w.U64(m.Size)
	w.Raw(m.ContentHash[:])
	w.Bool(m.Deleted)
	w.U16(uint16(len(m.Chunks)))
	for _, c := range m.Chunks {
		w.Str(c.Range)
		w.U64(c.ID)
		w.U64(c.Size)
		w.Raw(c.Hash[:])
	}
}

func readManifest(r *wire.Reader, l Limits) Manifest {
	m := Manifest{Bucket: r.Str(), Key: r.Str(), Size: r.U64()}
	r.Fixed(m.ContentHash[:])
	m.Deleted = r.Bool()
	nc := int(r.U16())
	if nc > l.MaxChunks && r.Err == nil {
		r.Err = fmt.Errorf("%w: %d > %d", ErrTooManyChunks, nc, l.MaxChunks)
	}
	if nc > 0 && r.Err == nil {
		m.Chunks = make([]Chunk, 0, min(nc, 256))
	}
	for j := 0; j < nc && r.Err == nil; j++ {
		c := Chunk{Range: r.Str(), ID: r.U64(), Size: r.U64()}
		r.Fixed(c.Hash[:])
		m.Chunks = append(m.Chunks, c)
	}
	return m
}

// EncodeManifest is the canonical encoding of one manifest, the same bytes
// it has inside a PutManifestTx; state stores manifests in this form.
func EncodeManifest(m *Manifest) []byte {
	w := &wire.Writer{}
	writeManifest(w, m)
	return w.B
}

// ParseManifest decodes and verifies what EncodeManifest produced.
func ParseManifest(b []byte, l Limits) (*Manifest, error) {
	r := &wire.Reader{B: b}
	m := readManifest(r, l)
	if err := r.Done(); err != nil {
		return nil, err
	}
	if err := m.Verify(l); err != nil {
		return nil, err
	}
	return &m, nil
}

// Parse decodes and statelessly verifies a transaction. It accepts b only if
// it is the canonical encoding of the result, so every accepted transaction
// has exactly one byte string and one ID. It never panics on any input.
func Parse(b []byte, l Limits) (*Tx, error) {
	if len(b) > l.MaxTxBytes {
		return nil, fmt.Errorf("%w: %d > %d bytes", ErrTooLarge, len(b), l.MaxTxBytes)
	}
	b = slices.Clone(b) // the Tx keeps its bytes; the caller keeps its buffer
	r := &wire.Reader{B: b}
	if v := r.U16(); r.Err == nil && v != CodecVersion {
		return nil, fmt.Errorf("%w: %d", ErrUnknownVersion, v)
	}
	kind := r.U8()
	var h Header
	h.NetworkID = r.U32()
	r.Fixed(h.ChainID[:])
	h.PChainHeight = r.U64()
	r.Fixed(h.Fingerprint[:])
	r.Fixed(h.Owner[:])
	h.Nonce = r.U64()
	h.Round = r.U64()
	h.BlockHeight = r.U64()
	n := r.U32()
	if r.Err != nil {
		return nil, r.Err
	}
	if n > uint32(l.MaxEntries) {
		return nil, fmt.Errorf("%w: %d > %d", ErrTooManyEntries, n, l.MaxEntries)
	}
	var u Unsigned
	switch kind {
	case kindAllocate:
		t := &AllocateTx{Header: h, Entries: make([]AllocateEntry, 0, min(n, 1024))}
		for i := uint32(0); i < n && r.Err == nil; i++ {
			t.Entries = append(t.Entries, AllocateEntry{Range: r.Str(), Count: r.U64(), Floor: r.U64()})
		}
		u = t
	case kindPutManifest:
		t := &PutManifestTx{Header: h, Entries: make([]Manifest, 0, min(n, 256))}
		for i := uint32(0); i < n && r.Err == nil; i++ {
			t.Entries = append(t.Entries, readManifest(r, l))
		}
		u = t
	case kindHeartbeat:
		u = &HeartbeatTx{Header: h}
	case kindLease:
		t := &LeaseTx{Header: h, Entries: make([]LeaseEntry, 0, min(n, 1024))}
		for i := uint32(0); i < n && r.Err == nil; i++ {
			t.Entries = append(t.Entries, readLeaseEntry(r))
		}
		u = t
	case kindManifest:
		u = readManifestEntries(r, h, n, l)
	case kindReclaim:
		u = readReclaimEntries(r, h, n)
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownKind, kind)
	}
	if err := verifyCount(u, int(n)); err != nil {
		return nil, err
	}
	unsignedEnd := r.Off
	sig := r.Take(sigLen)
	if err := r.Done(); err != nil {
		if err == wire.ErrTrailing {
			return nil, fmt.Errorf("%w: %d", ErrTrailingBytes, len(b)-r.Off)
		}
		return nil, err
	}
	if err := u.verifyEntries(l); err != nil {
		return nil, err
	}
	if !bytes.Equal(appendUnsigned(make([]byte, 0, unsignedEnd), u), b[:unsignedEnd]) {
		// Unreachable with the fixed-width format above; kept as the
		// definition of canonical.
		return nil, ErrNotCanonical
	}
	tx := &Tx{Unsigned: u}
	copy(tx.Signature[:], sig)
	tx.initialize(b[:unsignedEnd:unsignedEnd], b)
	return tx, nil
}
