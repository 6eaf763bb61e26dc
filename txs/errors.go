package txs

import (
	"github.com/s-chain/schain/errcode"

	"github.com/s-chain/schain/internal/wire"
)

// Decoding and stateless-validation errors. Each names one rule so that a
// rejected transaction says exactly why.
var (
	ErrTooLarge           = errcode.New(errcode.InvalidParams, "too_large", "txs: transaction exceeds the size limit")
	ErrTruncated          = wire.ErrTruncated
	ErrTrailingBytes      = errcode.New(errcode.InvalidParams, "trailing_bytes", "txs: trailing bytes after the transaction")
	ErrUnknownVersion     = errcode.New(errcode.InvalidParams, "unknown_version", "txs: unknown codec version")
	ErrUnknownKind        = errcode.New(errcode.InvalidParams, "unknown_kind", "txs: unknown transaction kind")
	ErrNoEntries          = errcode.New(errcode.InvalidParams, "no_entries", "txs: transaction has no entries")
	ErrTooManyEntries     = errcode.New(errcode.InvalidParams, "too_many_entries", "txs: too many entries")
	ErrBadRange           = errcode.New(errcode.InvalidParams, "bad_range", "txs: invalid range")
	ErrBadBucket          = errcode.New(errcode.InvalidParams, "bad_bucket", "txs: invalid bucket")
	ErrBadKey             = errcode.New(errcode.InvalidParams, "bad_key", "txs: invalid object key")
	ErrZeroCount          = errcode.New(errcode.InvalidParams, "zero_count", "txs: count must be at least 1")
	ErrCountTooLarge      = errcode.New(errcode.InvalidParams, "count_too_large", "txs: count exceeds the per-entry limit")
	ErrTooManyChunks      = errcode.New(errcode.InvalidParams, "too_many_chunks", "txs: too many chunks in a manifest")
	ErrChunkOutsideBucket = errcode.New(errcode.InvalidParams, "chunk_outside_bucket", "txs: chunk range is neither the bucket nor a band of it")
	ErrZeroChunkSize      = errcode.New(errcode.InvalidParams, "zero_chunk_size", "txs: chunk size must be at least 1")
	ErrDuplicateChunk     = errcode.New(errcode.InvalidParams, "duplicate_chunk", "txs: chunk listed twice in a manifest")
	ErrSizeMismatch       = errcode.New(errcode.InvalidParams, "size_mismatch", "txs: chunk sizes do not add up to the object size")
	ErrBadTombstone       = errcode.New(errcode.InvalidParams, "bad_tombstone", "txs: a deleted manifest has no size, hash or chunks")
	ErrBadBool            = wire.ErrBadBool
	ErrDuplicateEntry     = errcode.New(errcode.InvalidParams, "duplicate_entry", "txs: object written twice in one transaction")
	ErrBadHolder          = errcode.New(errcode.InvalidParams, "bad_holder", "txs: invalid lease holder")
	ErrBadLease           = errcode.New(errcode.InvalidParams, "bad_lease", "txs: invalid lease entry")
	ErrBadCondition       = errcode.New(errcode.InvalidParams, "bad_condition", "txs: invalid manifest condition")
	ErrAttributesTooLarge = errcode.New(errcode.InvalidParams, "attributes_too_large", "txs: manifest attributes exceed the size limit")
	ErrBadSignature       = errcode.New(errcode.Rejected, "bad_signature", "txs: signature does not verify")
	ErrNotCanonical       = errcode.New(errcode.InvalidParams, "not_canonical", "txs: bytes are not the canonical encoding")
	// ErrHeartbeatFingerprint: a heartbeat is pinned to no membership, so
	// its fingerprint must be zero (one byte string per heartbeat).
	ErrHeartbeatFingerprint = errcode.New(errcode.InvalidParams, "heartbeat_fingerprint", "txs: a heartbeat carries a zero fingerprint")
	// ErrHeartbeatBlockHeight: a heartbeat is bound to its liveness round,
	// never to a block height.
	ErrHeartbeatBlockHeight = errcode.New(errcode.InvalidParams, "heartbeat_block_height", "txs: a heartbeat carries a zero block height")
)
