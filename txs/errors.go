package txs

import (
	"errors"

	"github.com/s-chain/schain/internal/wire"
)

// Decoding and stateless-validation errors. Each names one rule so that a
// rejected transaction says exactly why.
var (
	ErrTooLarge           = errors.New("txs: transaction exceeds the size limit")
	ErrTruncated          = wire.ErrTruncated
	ErrTrailingBytes      = errors.New("txs: trailing bytes after the transaction")
	ErrUnknownVersion     = errors.New("txs: unknown codec version")
	ErrUnknownKind        = errors.New("txs: unknown transaction kind")
	ErrNoEntries          = errors.New("txs: transaction has no entries")
	ErrTooManyEntries     = errors.New("txs: too many entries")
	ErrBadRange           = errors.New("txs: invalid range")
	ErrBadBucket          = errors.New("txs: invalid bucket")
	ErrBadKey             = errors.New("txs: invalid object key")
	ErrZeroCount          = errors.New("txs: count must be at least 1")
	ErrCountTooLarge      = errors.New("txs: count exceeds the per-entry limit")
	ErrTooManyChunks      = errors.New("txs: too many chunks in a manifest")
	ErrChunkOutsideBucket = errors.New("txs: chunk range is neither the bucket nor a band of it")
	ErrZeroChunkSize      = errors.New("txs: chunk size must be at least 1")
	ErrDuplicateChunk     = errors.New("txs: chunk listed twice in a manifest")
	ErrSizeMismatch       = errors.New("txs: chunk sizes do not add up to the object size")
	ErrBadTombstone       = errors.New("txs: a deleted manifest has no size, hash or chunks")
	ErrBadBool            = wire.ErrBadBool
	ErrDuplicateEntry     = errors.New("txs: object written twice in one transaction")
	ErrBadSignature       = errors.New("txs: signature does not verify")
	ErrNotCanonical       = errors.New("txs: bytes are not the canonical encoding")
	// ErrHeartbeatFingerprint: a heartbeat is pinned to no membership, so
	// its fingerprint must be zero (one byte string per heartbeat).
	ErrHeartbeatFingerprint = errors.New("txs: a heartbeat carries a zero fingerprint")
)
