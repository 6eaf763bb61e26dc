package txs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/internal/wire"
)

// ConditionKind says what a manifest write requires of the object it writes.
type ConditionKind uint8

// The conditions. An object is live when its newest manifest is not a
// tombstone.
const (
	// IfAny: no requirement (an unconditional write).
	IfAny ConditionKind = iota
	// IfAbsent: the object is not live (S3 If-None-Match: *, O_EXCL).
	IfAbsent
	// IfVersion: the object is live at Version.
	IfVersion
	// IfContentHash: the object is live with ContentHash (S3 If-Match on
	// the content).
	IfContentHash
	conditionKinds
)

var conditionNames = [conditionKinds]string{"any", "absent", "version", "contentHash"}

func (k ConditionKind) String() string {
	if k < conditionKinds {
		return conditionNames[k]
	}
	return fmt.Sprintf("condition(%d)", uint8(k))
}

// MarshalText writes the condition's name.
func (k ConditionKind) MarshalText() ([]byte, error) {
	if k >= conditionKinds {
		return nil, fmt.Errorf("%w: %d", ErrBadCondition, k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a condition's name ("" is any).
func (k *ConditionKind) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*k = IfAny
		return nil
	}
	for i, n := range conditionNames {
		if n == string(b) {
			*k = ConditionKind(i)
			return nil
		}
	}
	return fmt.Errorf("%w: %q (want one of %s)", ErrBadCondition, b, strings.Join(conditionNames[:], ", "))
}

// Condition is a manifest write's precondition. It is signed with the
// write and checked when the transaction executes, against the state its
// block builds on, so two writers that both read version v cannot both
// replace it: the second finds v+1.
type Condition struct {
	Kind ConditionKind `json:"kind"`
	// Version, for IfVersion.
	Version uint64 `json:"version,omitempty"`
	// ContentHash, for IfContentHash.
	ContentHash ids.ID `json:"contentHash"`
}

// MarshalJSON leaves out the hash unless the kind uses it.
func (c Condition) MarshalJSON() ([]byte, error) {
	type plain struct {
		Kind        ConditionKind `json:"kind"`
		Version     uint64        `json:"version,omitempty"`
		ContentHash *ids.ID       `json:"contentHash,omitempty"`
	}
	p := plain{Kind: c.Kind, Version: c.Version}
	if c.Kind == IfContentHash {
		p.ContentHash = &c.ContentHash
	}
	return json.Marshal(p)
}

// Verify checks that the condition carries exactly what its kind uses, so
// every condition has one encoding.
func (c Condition) Verify() error {
	switch c.Kind {
	case IfAny, IfAbsent:
		if c.Version != 0 || c.ContentHash != ids.Empty {
			return fmt.Errorf("%w: %s takes no version or hash", ErrBadCondition, c.Kind)
		}
	case IfVersion:
		if c.Version == 0 || c.ContentHash != ids.Empty {
			return fmt.Errorf("%w: version takes a version above 0 and no hash", ErrBadCondition)
		}
	case IfContentHash:
		if c.Version != 0 {
			return fmt.Errorf("%w: contentHash takes no version", ErrBadCondition)
		}
	default:
		return fmt.Errorf("%w: kind %d", ErrBadCondition, c.Kind)
	}
	return nil
}

// ManifestEntry is one versioned manifest write: the manifest, the object's
// opaque attributes (a SeaweedFS filer stores its encoded entry there) and
// the condition the write requires.
type ManifestEntry struct {
	Manifest
	// Attributes are stored with the manifest and returned by reads and
	// listings; S-Chain never interprets them. At most
	// Limits.MaxAttributeBytes; a tombstone has none.
	Attributes []byte    `json:"attributes,omitempty"`
	Condition  Condition `json:"condition"`
	// Adopt lets the write take over chunks another live object holds (a
	// move: a filer's rename, a multipart upload's completion): they are
	// bound to this object from now on, and released when it drops them,
	// not when their former holder does. Without it such a chunk refuses
	// the write.
	Adopt bool `json:"adopt,omitempty"`
}

// Verify checks an entry on its own.
func (e *ManifestEntry) Verify(l Limits) error {
	if err := e.Manifest.Verify(l); err != nil {
		return err
	}
	if len(e.Attributes) > l.MaxAttributeBytes {
		return fmt.Errorf("%w: %d > %d bytes", ErrAttributesTooLarge, len(e.Attributes), l.MaxAttributeBytes)
	}
	if e.Deleted && len(e.Attributes) != 0 {
		return fmt.Errorf("%w: a tombstone carries no attributes", ErrBadTombstone)
	}
	return e.Condition.Verify()
}

// ChunkRef names a chunk by its range and id.
type ChunkRef struct {
	Range string `json:"range"`
	ID    uint64 `json:"id"`
}

// Bucket is the bucket a chunk's range belongs to: its first segment.
func (c ChunkRef) Bucket() string {
	b, _, _ := strings.Cut(c.Range, "/")
	return b
}

// ManifestTx writes versioned manifests of buckets of one owner (kind 4,
// from execute.Rules.Manifests on; it replaces PutManifestTx). Entries are
// applied in order, each against the state the earlier ones left: two
// writes of one object in one transaction are two versions. An entry whose
// condition fails, or whose chunks another live object holds, writes
// nothing; its receipt entry says why, and the other entries still apply.
type ManifestTx struct {
	Header
	Entries []ManifestEntry `json:"entries"`
}

// ReclaimTx acknowledges released chunks a blob store has reclaimed (kind
// 5): they leave the bucket's released list for good, and can never be
// bound to an object again. The owner of each chunk's bucket signs it.
type ReclaimTx struct {
	Header
	Entries []ChunkRef `json:"entries"`
}

const (
	kindManifest byte = 4
	kindReclaim  byte = 5
	// Kinds 6 and 7 are reserved for manifests (issue 33).
)

var (
	_ Unsigned = (*ManifestTx)(nil)
	_ Unsigned = (*ReclaimTx)(nil)
)

func (t *ManifestTx) Head() *Header         { return &t.Header }
func (t *ManifestTx) Visit(v Visitor) error { return v.Manifest(t) }
func (*ManifestTx) kind() byte              { return kindManifest }
func (t *ManifestTx) entries() int          { return len(t.Entries) }
func (t *ReclaimTx) Head() *Header          { return &t.Header }
func (t *ReclaimTx) Visit(v Visitor) error  { return v.Reclaim(t) }
func (*ReclaimTx) kind() byte               { return kindReclaim }
func (t *ReclaimTx) entries() int           { return len(t.Entries) }

func (t *ManifestTx) WithHeader(h Header) Unsigned { return &ManifestTx{Header: h, Entries: t.Entries} }
func (t *ReclaimTx) WithHeader(h Header) Unsigned  { return &ReclaimTx{Header: h, Entries: t.Entries} }

// Ranges returns each manifest's bucket: the range its owner must own.
func (t *ManifestTx) Ranges() []string {
	rs := make([]string, len(t.Entries))
	for i := range t.Entries {
		rs[i] = t.Entries[i].Bucket
	}
	return rs
}

// Ranges returns each chunk's bucket: the released list it leaves is the
// bucket's.
func (t *ReclaimTx) Ranges() []string {
	rs := make([]string, len(t.Entries))
	for i, c := range t.Entries {
		rs[i] = c.Bucket()
	}
	return rs
}

func (t *ManifestTx) verifyEntries(l Limits) error {
	for i := range t.Entries {
		if err := t.Entries[i].Verify(l); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}

func (t *ReclaimTx) verifyEntries(l Limits) error {
	seen := make(map[chunkRef]struct{}, len(t.Entries))
	for i, c := range t.Entries {
		if err := VerifyRange(c.Range, l); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		ref := chunkRef{c.Range, c.ID}
		if _, dup := seen[ref]; dup {
			return fmt.Errorf("entry %d: %w: %s#%d", i, ErrDuplicateChunk, c.Range, c.ID)
		}
		seen[ref] = struct{}{}
	}
	return nil
}

func (t *ManifestTx) encodeEntries(w *wire.Writer) {
	for i := range t.Entries {
		writeManifestEntry(w, &t.Entries[i])
	}
}

func (t *ReclaimTx) encodeEntries(w *wire.Writer) {
	for _, c := range t.Entries {
		w.Str(c.Range)
		w.U64(c.ID)
	}
}

// adoptFlag is the high bit of an entry's condition byte.
const adoptFlag = 0x80

// writeManifestEntry: the manifest, the condition (its kind, with the
// adopt flag in the high bit, then the version or hash the kind uses,
// nothing for the others) and the attributes (u32 length).
func writeManifestEntry(w *wire.Writer, e *ManifestEntry) {
	writeManifest(w, &e.Manifest)
	kind := byte(e.Condition.Kind)
	if e.Adopt {
		kind |= adoptFlag
	}
	w.U8(kind)
	switch e.Condition.Kind {
	case IfVersion:
		w.U64(e.Condition.Version)
	case IfContentHash:
		w.Raw(e.Condition.ContentHash[:])
	}
	w.U32(uint32(len(e.Attributes)))
	w.Raw(e.Attributes)
}

func readManifestEntry(r *wire.Reader, l Limits) ManifestEntry {
	e := ManifestEntry{Manifest: readManifest(r, l)}
	kind := r.U8()
	e.Condition.Kind, e.Adopt = ConditionKind(kind&^adoptFlag), kind&adoptFlag != 0
	switch e.Condition.Kind {
	case IfVersion:
		e.Condition.Version = r.U64()
	case IfContentHash:
		r.Fixed(e.Condition.ContentHash[:])
	}
	n := r.U32()
	if n > uint32(l.MaxAttributeBytes) && r.Err == nil {
		r.Err = fmt.Errorf("%w: %d > %d bytes", ErrAttributesTooLarge, n, l.MaxAttributeBytes)
	}
	if n > 0 && r.Err == nil {
		e.Attributes = slices.Clone(r.Take(int(n)))
	}
	return e
}

func readReclaimEntries(r *wire.Reader, h Header, n uint32) *ReclaimTx {
	t := &ReclaimTx{Header: h, Entries: make([]ChunkRef, 0, min(n, 1024))}
	for i := uint32(0); i < n && r.Err == nil; i++ {
		t.Entries = append(t.Entries, ChunkRef{Range: r.Str(), ID: r.U64()})
	}
	return t
}

func readManifestEntries(r *wire.Reader, h Header, n uint32, l Limits) *ManifestTx {
	t := &ManifestTx{Header: h, Entries: make([]ManifestEntry, 0, min(n, 256))}
	for i := uint32(0); i < n && r.Err == nil; i++ {
		t.Entries = append(t.Entries, readManifestEntry(r, l))
	}
	return t
}

// Ref names the chunk.
func (c Chunk) Ref() ChunkRef { return ChunkRef{Range: c.Range, ID: c.ID} }

// Bucket is the bucket the chunk's range belongs to.
func (c Chunk) Bucket() string { return c.Ref().Bucket() }

// Overhead is the bytes of a transaction besides its entries: the header
// and the signature.
const Overhead = headerLen + sigLen

// EncodedLen is the entry's size inside a ManifestTx, so that a batch can
// be cut to fit Limits.MaxTxBytes before it is signed.
func (e *ManifestEntry) EncodedLen() int {
	n := 2 + len(e.Bucket) + 2 + len(e.Key) + 8 + 32 + 1 + 2
	for _, c := range e.Chunks {
		n += 2 + len(c.Range) + 8 + 8 + 32
	}
	n++
	switch e.Condition.Kind {
	case IfVersion:
		n += 8
	case IfContentHash:
		n += 32
	}
	return n + 4 + len(e.Attributes)
}
