package schainfiler

import (
	"context"
	"errors"
)

var (
	// ErrNotFound: no manifest at that key (a tombstone is found, Deleted).
	ErrNotFound = errors.New("schainfiler: no manifest")
	// ErrPreconditionFailed: the write's precondition failed; another writer
	// changed the entry since it was read.
	ErrPreconditionFailed = errors.New("schainfiler: the entry changed since it was read (precondition failed)")
)

// Record is a manifest as the store reads it.
type Record struct {
	Key        string
	Version    uint64
	Deleted    bool
	Attributes []byte
	// Chunks are the chunks bound to the manifest (Get fills them; a
	// listing does not).
	Chunks []Chunk
}

// Chunk names stored bytes by the S-Chain range and id their key came
// from.
type Chunk struct {
	Range string
	ID    uint64
	Size  uint64
}

// Write is one manifest write: an entry (Attributes, Chunks) or a
// tombstone (Deleted), unconditional unless IfAbsent or IfVersion is set.
type Write struct {
	Key        string
	Attributes []byte
	Chunks     []Chunk
	Deleted    bool
	IfAbsent   bool
	IfVersion  uint64
	// Adopt takes the chunks over from another entry that holds them.
	Adopt bool
	// ThenGet is a key of the same bucket to read once the write is
	// accepted, in the write's exchange (Written.Then).
	ThenGet string
}

// Written is what a write answers.
type Written struct {
	// Version is the entry's new version (0 for a deletion of what was not
	// live).
	Version uint64
	// Then is the record at Write.ThenGet, read at the write's height or
	// later (Deleted also when there is none); nil when the chain did not
	// answer it (the caller reads on its own).
	Then *Record
}

// Page is one page of a listing: live manifests in key order.
type Page struct {
	Records   []Record
	Truncated bool
	// Next is where the next page starts after.
	Next string
}

// Chain is what the store asks of S-Chain: manifests of one bucket, read
// and written at the bucket's owner, so that a read sees every write
// acknowledged before it.
type Chain interface {
	// Get reads the newest manifest at key.
	Get(ctx context.Context, bucket, key string) (Record, error)
	// Put commits w and waits until it is accepted.
	Put(ctx context.Context, bucket string, w Write) (Written, error)
	// List reads one page of live manifests whose keys start with prefix,
	// after startAfter.
	List(ctx context.Context, bucket, prefix, startAfter string, limit int) (Page, error)
	// Released reads the oldest chunks of bucket's released list.
	Released(ctx context.Context, bucket string, limit int) ([]Chunk, error)
	// Reclaim acknowledges that released chunks are reclaimed.
	Reclaim(ctx context.Context, chunks []Chunk) error
}
