package api

import "strings"

// PreconditionData is the data of CodePreconditionFailed: the object and
// its current version (0: not live), so that the caller can re-read it and
// decide, instead of retrying the same write.
type PreconditionData struct {
	Reason  string `json:"reason"`
	Bucket  string `json:"bucket"`
	Key     string `json:"key"`
	Current uint64 `json:"current"`
	TxID    ID     `json:"txID"`
	Index   int    `json:"index"`
}

// RefusalCode is the code a write's refused receipt entry (its Refused
// reason) is answered with: CodePreconditionFailed, CodeConflict, or
// CodeRejected for the other rules.
func RefusalCode(reason string) int {
	switch reason {
	case "precondition_failed":
		return CodePreconditionFailed
	case "chunk_in_use", "chunk_released", "not_released":
		return CodeConflict
	}
	return CodeRejected
}

// Refusal is the error data of a refused receipt entry, the shape
// RefusalCode's code carries.
func Refusal(txID ID, index int, e ReceiptEntry) any {
	switch RefusalCode(e.Refused) {
	case CodePreconditionFailed:
		return PreconditionData{Reason: e.Refused, Bucket: e.Bucket, Key: e.Key, Current: e.Current, TxID: txID, Index: index}
	case CodeConflict:
		return ConflictData{Reason: e.Refused, Detail: e.Detail, TxID: txID, Index: index}
	}
	return RejectedData{Reason: e.Refused}
}

// ConflictData is the data of CodeConflict (reason "chunk_in_use" or
// "chunk_released"): Detail names the chunk and the object that holds it.
type ConflictData struct {
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	TxID   ID     `json:"txID"`
	Index  int    `json:"index"`
}

// MaxListLimit bounds the entries of one listManifests or listReleased
// page; a limit of 0 asks for this many.
const MaxListLimit = 1000

// ListScanFactor bounds the records one listManifests page reads at
// ListScanFactor × the limit, tombstones included, so that a page costs a
// bounded amount however many deletions came before; a page cut short by
// it is Truncated with Next set.
const ListScanFactor = 8

// ListManifestsArgs asks for one page of a bucket's live objects (no
// tombstones) in key order, from accepted state: keys that start with
// Prefix, after StartAfter. With Delimiter, keys that contain it after
// Prefix roll up into CommonPrefixes (S3 ListObjectsV2 semantics: a filer
// lists a directory with Prefix "dir/" and Delimiter "/").
type ListManifestsArgs struct {
	Bucket     string `json:"bucket"`
	Prefix     string `json:"prefix,omitempty"`
	StartAfter string `json:"startAfter,omitempty"`
	Delimiter  string `json:"delimiter,omitempty"`
	Limit      int    `json:"limit,omitempty"`
	AtLeast
	OwnerRead
}

// ListManifestsReply is one page. While Truncated, the next page is
// ListManifestsArgs with StartAfter = Next. Height is the accepted height
// the page was read at.
type ListManifestsReply struct {
	Head
	Manifests      []ManifestReply `json:"manifests"`
	CommonPrefixes []string        `json:"commonPrefixes,omitempty"`
	Truncated      bool            `json:"truncated"`
	Next           string          `json:"next,omitempty"`
	Height         uint64          `json:"height"`
}

// ReleasedCursor names a released list's entry: the next page starts after
// it.
type ReleasedCursor struct {
	Height uint64 `json:"height"`
	Range  string `json:"range"`
	ID     uint64 `json:"id"`
}

// ListReleasedArgs asks for one page of a bucket's released chunks (chunks
// of overwritten or deleted objects, waiting to be reclaimed), in the order
// they were released.
type ListReleasedArgs struct {
	Bucket string          `json:"bucket"`
	After  *ReleasedCursor `json:"after,omitempty"`
	Limit  int             `json:"limit,omitempty"`
	AtLeast
}

// ListReleasedReply is one page; while Truncated, the next one starts
// after its last entry.
type ListReleasedReply struct {
	Head
	Released  []Released `json:"released"`
	Truncated bool       `json:"truncated"`
	Height    uint64     `json:"height"`
}

// Released is one released chunk: its range, id, size and hash, and the
// height of the block that released it.
type Released struct {
	Range  string `json:"range"`
	ID     uint64 `json:"id"`
	Size   uint64 `json:"size"`
	Hash   ID     `json:"hash"`
	Height uint64 `json:"height"`
}

// ReclaimArgs tells the owner of the chunks' bucket that a blob store
// reclaimed them: they leave the released list for good. A chunk that is
// not on it is refused per entry (the receipt's Refused "not_released"),
// so acknowledging twice is harmless.
type ReclaimArgs struct {
	Chunks []ChunkRef `json:"chunks"`
	Wait   Wait       `json:"wait,omitempty"`
	WaitMs uint64     `json:"waitMs,omitempty"`
}

// ReclaimReply names the transaction.
type ReclaimReply struct {
	TxID    ID            `json:"txID"`
	Owner   NodeID        `json:"owner"`
	Receipt *ReceiptReply `json:"receipt,omitempty"`
}

// ChunkRef names a chunk by its range and id (txs.ChunkRef).
type ChunkRef struct {
	Range string `json:"range"`
	ID    uint64 `json:"id"`
}

// Bucket is the bucket a chunk's range belongs to, its first segment (the
// chain's rule, txs.ChunkRef.Bucket): the owner a reclaim goes to.
func (c ChunkRef) Bucket() string {
	b, _, _ := strings.Cut(c.Range, "/")
	return b
}

// Condition is a versioned manifest write's precondition (txs.Condition),
// checked when the transaction executes against the object's newest
// manifest.
type Condition struct {
	Kind        string `json:"kind"`
	Version     uint64 `json:"version,omitempty"`
	ContentHash *ID    `json:"contentHash,omitempty"`
}

// The kinds of Condition (txs.ConditionKind's names).
const (
	// IfAny (or empty): no requirement.
	IfAny = "any"
	// IfAbsent: the object is not live (S3 If-None-Match: *).
	IfAbsent = "absent"
	// IfVersion: the object is live at Version.
	IfVersion = "version"
	// IfContentHash: the object is live with ContentHash (S3 If-Match).
	IfContentHash = "contentHash"
)
