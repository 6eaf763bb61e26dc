package txs

import (
	"crypto/sha256"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"

	"github.com/s-chain/schain/internal/wire"
)

// Header is what every transaction commits to besides its entries: where it
// is valid (network, chain), which P-chain height and membership it was pinned
// against, when it was signed, and who signs it.
type Header struct {
	NetworkID    uint32     `json:"networkID"`
	ChainID      ids.ID     `json:"chainID"`
	PChainHeight uint64     `json:"pChainHeight"`
	Fingerprint  ids.ID     `json:"fingerprint"`
	Owner        ids.NodeID `json:"owner"`
	// Nonce tells apart two otherwise identical intents of one owner in one
	// round (say, two separate requests for one id in the same range): BLS
	// signatures are deterministic, so without it the second would be the
	// same transaction and rejected as a replay.
	Nonce uint64 `json:"nonce"`
	// Round is the liveness round the owner signed in. A heartbeat counts
	// for exactly this round; any other transaction expires a few rounds
	// later (execute.Liveness.TxLifetime), which is what bounds the replay
	// index to recent transactions however long a membership lasts.
	Round uint64 `json:"round"`
	// BlockHeight, when not zero, is the only block height at which the
	// transaction is valid. A new owner signs its first writes against the
	// membership the next block will open, before that membership is in
	// force, so that they ride in that block; binding them to its height is
	// what makes re-signing them safe when they miss it: one block per
	// height is accepted, so once that height is, the transaction can never
	// be applied (docs/concepts/liveness.md, "What a failover waits for").
	BlockHeight uint64 `json:"blockHeight,omitempty"`
}

// AllocateEntry asks for Count ids from Range, starting no lower than Floor.
// Floor is how a cutover starts a range above every id a legacy allocator
// ever issued; it never moves a counter down.
type AllocateEntry struct {
	Range string `json:"range"`
	Count uint64 `json:"count"`
	Floor uint64 `json:"floor"`
}

// Chunk points at stored bytes by the id reserved for them in Range.
type Chunk struct {
	Range string `json:"range"`
	ID    uint64 `json:"id"`
	Size  uint64 `json:"size"`
	Hash  ids.ID `json:"hash"`
}

// Manifest is an object's committed description. Its range is its bucket, so
// only the bucket's owner may write it. A deleted manifest is a tombstone.
type Manifest struct {
	Bucket      string  `json:"bucket"`
	Key         string  `json:"key"`
	Size        uint64  `json:"size"`
	ContentHash ids.ID  `json:"contentHash"`
	Chunks      []Chunk `json:"chunks"`
	Deleted     bool    `json:"deleted"`
}

// Visitor is implemented by everything that handles each kind differently
// (execution, APIs), so adding a kind is a compile error everywhere it
// matters.
type Visitor interface {
	Allocate(*AllocateTx) error
	PutManifest(*PutManifestTx) error
	Heartbeat(*HeartbeatTx) error
	Lease(*LeaseTx) error
	Manifest(*ManifestTx) error
	Reclaim(*ReclaimTx) error
}

// Unsigned is the part of a transaction the owner signs.
type Unsigned interface {
	Head() *Header
	Visit(Visitor) error
	// Ranges lists, in entry order, the range that decides each entry's
	// owner.
	Ranges() []string
	// WithHeader returns the same entries under header h: what an owner
	// re-signs when the membership its transaction was signed against is
	// superseded. The entries are shared, not copied.
	WithHeader(h Header) Unsigned
	kind() byte
	entries() int
	encodeEntries(*wire.Writer)
	verifyEntries(Limits) error
}

// AllocateTx reserves ids in one or more ranges of one owner.
type AllocateTx struct {
	Header
	Entries []AllocateEntry `json:"entries"`
}

// PutManifestTx commits one or more manifests in buckets of one owner.
type PutManifestTx struct {
	Header
	Entries []Manifest `json:"entries"`
}

// HeartbeatTx is a validator's statement that it is alive in one liveness
// round (the header's Round). PChainHeight names the P-chain height whose validator
// set holds the signer's key; Fingerprint is zero, because the heartbeat is
// what decides the set ranges are pinned to, not something pinned to it. It
// has no entries and touches no counter: its only effect is the signer's
// last-heartbeat record.
type HeartbeatTx struct {
	Header
}

const (
	kindAllocate    byte = 1
	kindPutManifest byte = 2
	kindHeartbeat   byte = 3
)

var (
	_ Unsigned = (*AllocateTx)(nil)
	_ Unsigned = (*PutManifestTx)(nil)
	_ Unsigned = (*HeartbeatTx)(nil)
)

func (t *AllocateTx) Head() *Header            { return &t.Header }
func (t *AllocateTx) Visit(v Visitor) error    { return v.Allocate(t) }
func (*AllocateTx) kind() byte                 { return kindAllocate }
func (t *AllocateTx) entries() int             { return len(t.Entries) }
func (t *PutManifestTx) Head() *Header         { return &t.Header }
func (t *PutManifestTx) Visit(v Visitor) error { return v.PutManifest(t) }
func (*PutManifestTx) kind() byte              { return kindPutManifest }
func (t *PutManifestTx) entries() int          { return len(t.Entries) }
func (t *HeartbeatTx) Head() *Header           { return &t.Header }
func (t *HeartbeatTx) Visit(v Visitor) error   { return v.Heartbeat(t) }
func (*HeartbeatTx) kind() byte                { return kindHeartbeat }
func (*HeartbeatTx) entries() int              { return 0 }

func (t *AllocateTx) WithHeader(h Header) Unsigned { return &AllocateTx{Header: h, Entries: t.Entries} }
func (t *PutManifestTx) WithHeader(h Header) Unsigned {
	return &PutManifestTx{Header: h, Entries: t.Entries}
}
func (*HeartbeatTx) WithHeader(h Header) Unsigned { return &HeartbeatTx{Header: h} }

// Ranges is empty: a heartbeat writes no range.
func (*HeartbeatTx) Ranges() []string { return nil }

func (t *HeartbeatTx) verifyEntries(Limits) error {
	switch {
	case t.Fingerprint != ids.Empty:
		return ErrHeartbeatFingerprint
	case t.BlockHeight != 0:
		return ErrHeartbeatBlockHeight
	}
	return nil
}

// verifyCount: an allocation or a manifest write carries at least one
// entry; a heartbeat none.
func verifyCount(u Unsigned, n int) error {
	switch {
	case u.kind() == kindHeartbeat && n != 0:
		return fmt.Errorf("%w: a heartbeat has no entries, got %d", ErrTooManyEntries, n)
	case u.kind() != kindHeartbeat && n == 0:
		return ErrNoEntries
	}
	return nil
}

// Ranges returns each entry's range.
func (t *AllocateTx) Ranges() []string {
	rs := make([]string, len(t.Entries))
	for i, e := range t.Entries {
		rs[i] = e.Range
	}
	return rs
}

// Ranges returns each manifest's bucket: the range its owner must own.
func (t *PutManifestTx) Ranges() []string {
	rs := make([]string, len(t.Entries))
	for i, e := range t.Entries {
		rs[i] = e.Bucket
	}
	return rs
}

func (t *AllocateTx) verifyEntries(l Limits) error {
	for i, e := range t.Entries {
		if err := VerifyRange(e.Range, l); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if e.Count == 0 {
			return fmt.Errorf("entry %d: %w", i, ErrZeroCount)
		}
		if e.Count > l.MaxCount {
			return fmt.Errorf("entry %d: %w: %d > %d", i, ErrCountTooLarge, e.Count, l.MaxCount)
		}
	}
	return nil
}

func (t *PutManifestTx) verifyEntries(l Limits) error {
	seen := make(map[[2]string]struct{}, len(t.Entries))
	for i := range t.Entries {
		m := &t.Entries[i]
		if err := m.Verify(l); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		k := [2]string{m.Bucket, m.Key}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("entry %d: %w: %s/%s", i, ErrDuplicateEntry, m.Bucket, m.Key)
		}
		seen[k] = struct{}{}
	}
	return nil
}

// Verify checks a manifest on its own: names, tombstone shape, chunk ranges
// inside the bucket, chunk sizes adding up to the object size.
func (m *Manifest) Verify(l Limits) error {
	if err := VerifyBucket(m.Bucket, l); err != nil {
		return err
	}
	if len(m.Key) == 0 || len(m.Key) > l.MaxKeyLen || !utf8.ValidString(m.Key) {
		return fmt.Errorf("%w: %d bytes, must be 1..%d bytes of UTF-8", ErrBadKey, len(m.Key), l.MaxKeyLen)
	}
	if m.Deleted {
		if m.Size != 0 || m.ContentHash != ids.Empty || len(m.Chunks) != 0 {
			return ErrBadTombstone
		}
		return nil
	}
	if len(m.Chunks) > l.MaxChunks {
		return fmt.Errorf("%w: %d > %d", ErrTooManyChunks, len(m.Chunks), l.MaxChunks)
	}
	var total, carry uint64
	seen := make(map[chunkRef]struct{}, len(m.Chunks))
	for j, c := range m.Chunks {
		if err := VerifyRange(c.Range, l); err != nil {
			return fmt.Errorf("chunk %d: %w", j, err)
		}
		if c.Range != m.Bucket && !strings.HasPrefix(c.Range, m.Bucket+"/") {
			return fmt.Errorf("chunk %d: %w: %q in bucket %q", j, ErrChunkOutsideBucket, c.Range, m.Bucket)
		}
		if c.Size == 0 {
			return fmt.Errorf("chunk %d: %w", j, ErrZeroChunkSize)
		}
		ref := chunkRef{c.Range, c.ID}
		if _, dup := seen[ref]; dup {
			return fmt.Errorf("chunk %d: %w: %s#%d", j, ErrDuplicateChunk, c.Range, c.ID)
		}
		seen[ref] = struct{}{}
		total, carry = bits.Add64(total, c.Size, carry)
		if carry != 0 {
			return fmt.Errorf("%w: chunk sizes overflow", ErrSizeMismatch)
		}
	}
	if total != m.Size {
		return fmt.Errorf("%w: chunks hold %d bytes, object has %d", ErrSizeMismatch, total, m.Size)
	}
	return nil
}

type chunkRef struct {
	r  string
	id uint64
}

// VerifyRange checks a range name: 1..MaxRangeLen printable ASCII bytes
// without spaces, made of non-empty '/'-separated segments ("bucket" or
// "bucket/band").
func VerifyRange(r string, l Limits) error {
	if len(r) == 0 || len(r) > l.MaxRangeLen {
		return fmt.Errorf("%w: %d bytes, must be 1..%d", ErrBadRange, len(r), l.MaxRangeLen)
	}
	prev := byte('/')
	for i := 0; i < len(r); i++ {
		c := r[i]
		if c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: byte 0x%02x at %d (printable ASCII only, no spaces)", ErrBadRange, c, i)
		}
		if c == '/' && prev == '/' {
			return fmt.Errorf("%w: empty segment in %q", ErrBadRange, r)
		}
		prev = c
	}
	if prev == '/' {
		return fmt.Errorf("%w: empty segment in %q", ErrBadRange, r)
	}
	return nil
}

// VerifyBucket checks a bucket: a range with a single segment.
func VerifyBucket(b string, l Limits) error {
	if err := VerifyRange(b, l); err != nil {
		return fmt.Errorf("%w: %w", ErrBadBucket, err)
	}
	if strings.IndexByte(b, '/') >= 0 {
		return fmt.Errorf("%w: %q contains '/'", ErrBadBucket, b)
	}
	return nil
}

// Tx is a signed transaction with its canonical bytes and ID cached.
type Tx struct {
	Unsigned  Unsigned
	Signature [bls.SignatureLen]byte

	bytes       []byte
	id          ids.ID
	signingHash ids.ID
}

// ID is SHA-256 of the canonical bytes.
func (tx *Tx) ID() ids.ID { return tx.id }

// Bytes returns the canonical encoding. The caller must not modify it.
func (tx *Tx) Bytes() []byte { return tx.bytes }

// SigningHash is the domain-separated digest the owner signs. It does not
// cover the signature, so it also serves as the replay key.
func (tx *Tx) SigningHash() ids.ID { return tx.signingHash }

// Entries is the number of entries under the signature.
func (tx *Tx) Entries() int { return tx.Unsigned.entries() }

// IsHeartbeat reports whether tx is a HeartbeatTx: no range, no counter,
// and it goes before client work wherever work queues.
func (tx *Tx) IsHeartbeat() bool { return tx.Unsigned.kind() == kindHeartbeat }

// Kind names the transaction kind for logs, metrics and APIs.
func (tx *Tx) Kind() string {
	switch tx.Unsigned.kind() {
	case kindAllocate:
		return "allocate"
	case kindPutManifest:
		return "putManifest"
	case kindHeartbeat:
		return "heartbeat"
	case kindLease:
		return "lease"
	case kindManifest:
		return "manifest"
	case kindReclaim:
		return "reclaim"
	default:
		return "unknown"
	}
}

func (tx *Tx) initialize(unsignedBytes []byte, all []byte) {
	tx.bytes = all
	tx.id = sha256.Sum256(all)
	tx.signingHash = signingHash(unsignedBytes)
}

// GossipID identifies the transaction in gossip (bloom filters, dedup).
func (tx *Tx) GossipID() ids.ID { return tx.id }
