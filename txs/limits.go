package txs

import (
	"errors"
	"fmt"
)

var errBadLimits = errors.New("txs: invalid limits")

// Limits bound what one transaction may carry. They are chain parameters
// (set in genesis): every node must use the same values, because a limit is
// part of validity.
type Limits struct {
	// MaxTxBytes bounds the encoded size of a transaction.
	MaxTxBytes int `json:"maxTxBytes"`
	// MaxEntries bounds the entries under one signature (the group-commit
	// batch).
	MaxEntries int `json:"maxEntries"`
	// MaxRangeLen bounds a range or bucket name in bytes.
	MaxRangeLen int `json:"maxRangeLen"`
	// MaxKeyLen bounds an object key in bytes (S3 allows 1024).
	MaxKeyLen int `json:"maxKeyLen"`
	// MaxChunks bounds the chunks of one manifest.
	MaxChunks int `json:"maxChunks"`
	// MaxCount bounds the ids one allocate entry may reserve, so one request
	// cannot burn a range.
	MaxCount uint64 `json:"maxCount"`
	// MaxAttributeBytes bounds the opaque attributes of one manifest (a
	// SeaweedFS filer's encoded entry).
	MaxAttributeBytes int `json:"maxAttributeBytes"`
}

// DefaultLimits are sized for group commit of 1024 small entries.
func DefaultLimits() Limits {
	return Limits{
		MaxTxBytes:  512 << 10,
		MaxEntries:  1024,
		MaxRangeLen: 128,
		MaxKeyLen:   1024,
		MaxChunks:   256,
		MaxCount:    1 << 20,
		// A filer entry of a 1 GiB object in 8 MiB chunks encodes to about
		// 8 KiB.
		MaxAttributeBytes: 32 << 10,
	}
}

// Verify rejects limits that could not be encoded or would admit nothing.
func (l Limits) Verify() error {
	switch {
	case l.MaxTxBytes < headerLen+sigLen+64:
		return fmt.Errorf("%w: maxTxBytes %d is below one minimal transaction", errBadLimits, l.MaxTxBytes)
	case l.MaxEntries < 1 || l.MaxEntries > 1<<16:
		return fmt.Errorf("%w: maxEntries %d not in [1, 65536]", errBadLimits, l.MaxEntries)
	case l.MaxRangeLen < 1 || l.MaxRangeLen > 1<<15:
		return fmt.Errorf("%w: maxRangeLen %d not in [1, 32768]", errBadLimits, l.MaxRangeLen)
	case l.MaxKeyLen < 1 || l.MaxKeyLen > 1<<15:
		return fmt.Errorf("%w: maxKeyLen %d not in [1, 32768]", errBadLimits, l.MaxKeyLen)
	case l.MaxChunks < 0 || l.MaxChunks > 1<<16-1:
		return fmt.Errorf("%w: maxChunks %d not in [0, 65535]", errBadLimits, l.MaxChunks)
	case l.MaxCount < 1:
		return fmt.Errorf("%w: maxCount must be at least 1", errBadLimits)
	case l.MaxAttributeBytes < 0 || l.MaxAttributeBytes > 1<<24:
		return fmt.Errorf("%w: maxAttributeBytes %d not in [0, 16777216]", errBadLimits, l.MaxAttributeBytes)
	}
	return nil
}
