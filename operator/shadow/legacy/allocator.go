// Package legacy defines the contract of the legacy id allocator that S-Chain
// shadows before cutover: a SeaweedFS-master-like service that hands out
// contiguous blocks of file keys per range.
//
// The package holds only the contract (interface, result, error classes) so
// that the comparator in package shadow, the embedded raft implementation in
// package legacyraft and any future client of a real SeaweedFS master agree on
// one vocabulary without importing each other.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package legacy

import "context"

// Allocator hands out count contiguous ids for rangeKey.
//
// Implementations must be safe for concurrent use. A returned error is
// classified with errors.Is against ErrUnavailable (retryable: no leader,
// warming up, forwarding failed, queue saturated) or ErrRejected (the request
// itself is invalid); callers must not parse messages.
type Allocator interface {
	Allocate(ctx context.Context, rangeKey string, count uint64) (Result, error)
}

// WriteReporter receives the highest id actually written for a range, the way
// SeaweedFS volume servers report their max file key in heartbeats. Legacy
// allocators whose counter is not durable use it to avoid reissuing written
// ids after a leader change; durable allocators may ignore it.
//
// Implementations must be safe for concurrent use.
type WriteReporter interface {
	ReportWritten(ctx context.Context, rangeKey string, maxWritten uint64) error
}

// Result is one successful allocation: ids [First, First+Count).
//
// Leader and Term identify who issued the ids and under which leadership; the
// comparator uses Term to tell a legacy reissue across leader changes (a known
// defect of a non-durable counter) from a duplicate within one term.
type Result struct {
	First  uint64 `json:"first"`
	Count  uint64 `json:"count"`
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
}

// End returns the first id after the allocation.
func (r Result) End() uint64 { return r.First + r.Count }
