package state

import (
	"fmt"
	"slices"

	"github.com/s-chain/schain/internal/wire"
	"github.com/s-chain/schain/txs"
)

// Object is an object's newest manifest with its version (kind 4 writes;
// a manifest written by a PutManifestTx before the manifests upgrade reads
// as version 0 at height 0, without attributes).
type Object struct {
	Manifest   txs.Manifest `json:"manifest"`
	Attributes []byte       `json:"attributes,omitempty"`
	// Version grows with every write of the object, its deletion included,
	// and is never reused (execute.NextVersion).
	Version uint64 `json:"version"`
	// Height is the block that wrote it.
	Height uint64 `json:"height"`
}

// Live reports whether o is an object and not a tombstone.
func (o *Object) Live() bool { return o != nil && !o.Manifest.Deleted }

const objectVersion byte = 1

// encodeObject: u8 record version | u64 version | u64 height | u32 length |
// manifest (txs encoding) | u32 length | attributes.
func encodeObject(o *Object) []byte {
	m := txs.EncodeManifest(&o.Manifest)
	w := &wire.Writer{B: make([]byte, 0, 1+8+8+4+len(m)+4+len(o.Attributes))}
	w.U8(objectVersion)
	w.U64(o.Version)
	w.U64(o.Height)
	w.U32(uint32(len(m)))
	w.Raw(m)
	w.U32(uint32(len(o.Attributes)))
	w.Raw(o.Attributes)
	return w.B
}

func decodeObject(b []byte, l txs.Limits) (*Object, error) {
	r := &wire.Reader{B: b}
	if v := r.U8(); r.Err == nil && v != objectVersion {
		return nil, fmt.Errorf("%w: object record version %d", ErrCorrupt, v)
	}
	o := &Object{Version: r.U64(), Height: r.U64()}
	m := r.Take(int(r.U32()))
	if n := int(r.U32()); n > 0 {
		o.Attributes = slices.Clone(r.Take(n))
	}
	if err := r.Done(); err != nil {
		return nil, fmt.Errorf("%w: object record: %w", ErrCorrupt, err)
	}
	parsed, err := txs.ParseManifest(m, l)
	if err != nil {
		return nil, fmt.Errorf("%w: object record: %w", ErrCorrupt, err)
	}
	o.Manifest = *parsed
	return o, nil
}

// ChunkStatus is where a chunk is in its life: bound to one live object,
// released when that object was overwritten or deleted, reclaimed once the
// blob store acknowledged it. A chunk never goes back.
type ChunkStatus uint8

// The chunk statuses; ChunkFree is a chunk no object ever named.
const (
	ChunkFree ChunkStatus = iota
	ChunkLive
	ChunkReleased
	ChunkReclaimed
)

func (s ChunkStatus) String() string {
	switch s {
	case ChunkFree:
		return "free"
	case ChunkLive:
		return "live"
	case ChunkReleased:
		return "released"
	case ChunkReclaimed:
		return "reclaimed"
	}
	return fmt.Sprintf("chunk_status(%d)", uint8(s))
}

// Chunk is what the chain records of one chunk.
type Chunk struct {
	Status ChunkStatus
	// Bucket and Key name the live object holding it (ChunkLive).
	Bucket, Key string
	// Height is the block that released it (ChunkReleased, ChunkReclaimed).
	Height uint64
}

const chunkVersion byte = 1

func encodeChunk(c Chunk) []byte {
	w := &wire.Writer{}
	w.U8(chunkVersion)
	w.U8(byte(c.Status))
	switch c.Status {
	case ChunkLive:
		w.Str(c.Bucket)
		w.Str(c.Key)
	default:
		w.U64(c.Height)
	}
	return w.B
}

func decodeChunk(b []byte) (Chunk, error) {
	r := &wire.Reader{B: b}
	if v := r.U8(); r.Err == nil && v != chunkVersion {
		return Chunk{}, fmt.Errorf("%w: chunk record version %d", ErrCorrupt, v)
	}
	c := Chunk{Status: ChunkStatus(r.U8())}
	switch c.Status {
	case ChunkLive:
		c.Bucket, c.Key = r.Str(), r.Str()
	case ChunkReleased, ChunkReclaimed:
		c.Height = r.U64()
	default:
		if r.Err == nil {
			r.Err = fmt.Errorf("chunk status %d", c.Status)
		}
	}
	if err := r.Done(); err != nil {
		return Chunk{}, fmt.Errorf("%w: chunk record: %w", ErrCorrupt, err)
	}
	return c, nil
}

// Released is one entry of a bucket's released list: a chunk its object no
// longer names, waiting for the blob store to reclaim it.
type Released struct {
	Chunk txs.Chunk `json:"chunk"`
	// Height is the block that released it.
	Height uint64 `json:"height"`
}

func encodeReleased(c txs.Chunk) []byte {
	w := &wire.Writer{}
	w.U64(c.Size)
	w.Raw(c.Hash[:])
	return w.B
}
