// Package api is the JSON-RPC contract of an S-Chain node: the service name,
// method arguments and replies, the error object and the data each code
// carries (the codes and reasons themselves are package errcode's). Server
// (package vm/rpc), client (package client) and the SeaweedFS patch share
// it, so they cannot drift apart.
//
// It imports only the standard library and errcode, so that the SeaweedFS
// patch copies it (seaweedfs/patch): identifiers are carried as their bytes
// (ID, NodeID) and written exactly as avalanchego writes its own; the node
// and avalanchego-typed callers convert at their edges (ids.ID(x)).
//
// The service is served at /ext/bc/<chainID> with gorilla/rpc v2 JSON
// (JSON-RPC 2.0); methods are "schain.<name>".
//
// Access: the methods that make the node sign (allocate, allocateBatch,
// putManifest, reclaim, acquireLease, renewLease, releaseLease) require
// "Authorization: Bearer <token>" with one of the node's write tokens (CodeUnauthorized otherwise), whose scope must
// cover the method and the range (CodeForbidden otherwise); the read
// methods (get*, list*) are open. Every request body is bounded
// (CodeRequestTooLarge, HTTP 413), and so are each token's write requests
// in flight (CodeTooManyRequests).
//
// Reads: every read answer carries the node's last accepted block (Head);
// a read may ask for a least height (MinHeight) and is answered NotReady
// below it, and a node that knows its state is old (bootstrapping, or far
// behind its peers) answers NotReady rather than old state.
package api

import (
	"fmt"

	"github.com/s-chain/schain/errcode"
)

// Service is the JSON-RPC service name (method prefix).
const Service = "schain"

// Error codes. They are part of the API: clients branch on them. Package
// errcode defines them, with each code's name and class, and gives every
// error the node can answer its code and reason.
const (
	CodeNotOwner        = int(errcode.NotOwner)
	CodeNotReady        = int(errcode.NotReady)
	CodeMempoolFull     = int(errcode.MempoolFull)
	CodeRejected        = int(errcode.Rejected)
	CodeInvalidParams   = int(errcode.InvalidParams)
	CodeUnknown         = int(errcode.Unknown)
	CodeTimeout         = int(errcode.Timeout)
	CodeNotFound        = int(errcode.NotFound)
	CodeUnauthorized    = int(errcode.Unauthorized)
	CodeTooManyRequests = int(errcode.TooManyRequests)
	CodeRequestTooLarge = int(errcode.RequestTooLarge)
	CodeForbidden       = int(errcode.Forbidden)
	CodeLeaseHeld       = int(errcode.LeaseHeld)
	CodeLeaseLost       = int(errcode.LeaseLost)
	// CodePreconditionFailed: a versioned write's condition failed
	// (PreconditionData).
	CodePreconditionFailed = int(errcode.PreconditionFailed)
	// CodeConflict: a manifest names a chunk another live object holds, or
	// one already released (ConflictData).
	CodeConflict = int(errcode.Conflict)
)

// Reasons of CodeUnauthorized (UnauthorizedData.Reason).
const (
	// ReasonNoTokenConfigured: the node's chain config lists no write token,
	// so its write methods are disabled.
	ReasonNoTokenConfigured = "no_token_configured"
	// ReasonMissing: the request carries no "Authorization: Bearer <token>".
	ReasonMissing = "missing"
	// ReasonInvalid: the token is not (or no longer) one of the node's write
	// tokens, or the Authorization header is malformed.
	ReasonInvalid = "invalid"
)

// UnauthorizedData says why a write was refused.
type UnauthorizedData struct {
	Reason string `json:"reason"`
}

// Reasons of CodeForbidden (ForbiddenData.Reason).
const (
	// ScopeMethod: the token's methods do not include the method called.
	ScopeMethod = "method_not_in_scope"
	// ScopeRange: the token's ranges do not cover the range (or a
	// manifest's bucket) written.
	ScopeRange = "range_not_in_scope"
)

// ForbiddenData names the scope a valid token lacks: the method, or the
// range, it would need to be given (chain config writeTokens[].methods,
// .ranges).
type ForbiddenData struct {
	Reason string `json:"reason"`
	Token  string `json:"token"`
	Method string `json:"method,omitempty"`
	Range  string `json:"range,omitempty"`
}

// LimitData names the exceeded limit of the node's chain config and its
// value.
type LimitData struct {
	Limit string `json:"limit"`
	Max   int64  `json:"max"`
}

// TimeoutData names the transaction a bounded wait gave up on, so that the
// caller can keep polling getReceipt instead of retrying (which would sign a
// second transaction).
type TimeoutData struct {
	TxID ID `json:"txID"`
	// Index is the request's entry in the transaction.
	Index  int    `json:"index"`
	WaitMs uint64 `json:"waitMs"`
}

// NotOwnerData is the routing hint of CodeNotOwner.
type NotOwnerData struct {
	Range        string `json:"range"`
	Owner        NodeID `json:"owner"`
	PChainHeight uint64 `json:"pChainHeight"`
}

// RetryData tells a client how long to back off, and, for NotReady, why
// (the error's reason: "bootstrapping", "behind_peers", "below_min_height",
// "no_membership", ...). A read refused for freshness also names the
// node's last accepted height.
type RetryData struct {
	RetryAfterMs   uint64 `json:"retryAfterMs"`
	Reason         string `json:"reason,omitempty"`
	AcceptedHeight uint64 `json:"acceptedHeight,omitempty"`
}

// Head is the node's last accepted block when it answered a read: the
// answer reflects accepted state at this height or above. Nodes older than
// this field leave it zero.
type Head struct {
	AcceptedHeight uint64 `json:"acceptedHeight"`
	AcceptedID     ID     `json:"acceptedID"`
}

// Newer reports whether h is a later view of the chain than o.
func (h Head) Newer(o Head) bool { return h.AcceptedHeight > o.AcceptedHeight }

// AtLeast bounds a read from below: a node whose last accepted height is
// below MinHeight answers NotReady (reason "below_min_height") instead of
// older state. A client that saw height H anywhere asks for at least H, so
// that no answer it takes goes back in time.
type AtLeast struct {
	MinHeight uint64 `json:"minHeight,omitempty"`
}

// RejectedData names the violated rule (a stable, lowercase identifier such
// as "unallocated_chunk": the error's errcode reason) of a Rejected or
// InvalidParams answer.
type RejectedData struct {
	Reason string `json:"reason"`
}

// NotFoundData names what was not found (the error's errcode reason, such
// as "no_block" or "certificates_off") of a NotFound error.
type NotFoundData struct {
	Reason string `json:"reason"`
}

// AllocateArgs asks the node to reserve Count ids in Range, starting no
// lower than Floor. With Wait, the call returns once the transaction is
// decided, with its receipt, or with CodeTimeout after
// min(WaitMs, the node's maxWaitMs) (WaitMs 0: the node's bound).
//
// With Pooled, the owner answers at once from ids it reserved in advance
// (an accepted reservation of the genesis poolChunk ids): the reply carries
// Base and Count, TxID names the reservation, and no transaction is signed
// for the request. Pooled takes no Floor and at most poolChunk/4 ids. Ids
// of a pool lost with its node are skipped, never reissued.
type AllocateArgs struct {
	Range  string `json:"range"`
	Count  uint64 `json:"count"`
	Floor  uint64 `json:"floor,omitempty"`
	Wait   Wait   `json:"wait,omitempty"`
	WaitMs uint64 `json:"waitMs,omitempty"`
	Pooled bool   `json:"pooled,omitempty"`
	// OwnEntry: the reply's receipt carries this write's entry only (see
	// ReceiptReply.First).
	OwnEntry bool `json:"ownEntry,omitempty"`
}

// Wait is how far a write call waits before it answers: not at all (the
// reply names the transaction), until the transaction is decided
// ("accepted", or true), or until a finality certificate covers its block
// ("final": the receipt carries the certificate). A wait is bounded by
// min(waitMs, the node's maxWaitMs); running out answers CodeTimeout with
// the transaction to poll.
type Wait string

// The waits.
const (
	WaitNone     Wait = ""
	WaitAccepted Wait = "accepted"
	WaitFinal    Wait = "final"
)

// ErrBadWait names the values wait takes.
var ErrBadWait = errcode.New(errcode.InvalidParams, "bad_wait", `api: wait is true, false, "accepted" or "final"`)

// Waits reports whether the call waits at all.
func (w Wait) Waits() bool { return w != WaitNone }

// MarshalJSON writes "accepted" as true, what nodes before "final" read.
func (w Wait) MarshalJSON() ([]byte, error) {
	switch w {
	case WaitNone:
		return []byte("false"), nil
	case WaitAccepted:
		return []byte("true"), nil
	case WaitFinal:
		return []byte(`"final"`), nil
	}
	return nil, fmt.Errorf("%w: %q", ErrBadWait, string(w))
}

// UnmarshalJSON reads a boolean or one of the names.
func (w *Wait) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "false", "null", `""`:
		*w = WaitNone
	case "true", `"accepted"`:
		*w = WaitAccepted
	case `"final"`:
		*w = WaitFinal
	default:
		return fmt.Errorf("%w, not %s", ErrBadWait, b)
	}
	return nil
}

// AllocateReply names the signed transaction and this request's entry in it.
// Base is known only after acceptance (with Wait), or at once for a pooled
// allocation (Pooled set, Base and Count filled, TxID the reservation).
type AllocateReply struct {
	TxID  ID  `json:"txID"`
	Index int `json:"index"`
	// PChainHeight the transaction is pinned to (0 for a pooled answer).
	PChainHeight uint64        `json:"pChainHeight"`
	Owner        NodeID        `json:"owner"`
	Receipt      *ReceiptReply `json:"receipt,omitempty"`
	Pooled       bool          `json:"pooled,omitempty"`
	Base         uint64        `json:"base,omitempty"`
	Count        uint64        `json:"count,omitempty"`
}

// MaxBatch bounds the requests of one allocateBatch call. A batch takes
// one of its token's pending slots, so the bound keeps what one slot can
// hold close to what MaxPendingPerToken single calls would (a group of
// requests, as the owner's group commit makes of concurrent ones).
const MaxBatch = 256

// AllocateBatchArgs carries 1..MaxBatch allocate requests in one call:
// each is answered exactly as allocate would answer it alone (its own
// reply or error, in Results at the same index). Requests to several
// ranges of the same owner, pooled or not, share one HTTP exchange; the
// owner group-commits its non-pooled ones together.
type AllocateBatchArgs struct {
	Requests []AllocateArgs `json:"requests"`
}

// AllocateBatchReply answers AllocateBatchArgs, index for index.
type AllocateBatchReply struct {
	Results []AllocateResult `json:"results"`
}

// AllocateResult is one request's answer: Reply, or Error with the code,
// message and data allocate would have answered.
type AllocateResult struct {
	Reply *AllocateReply `json:"reply,omitempty"`
	Error *Error         `json:"error,omitempty"`
}

// PutManifestArgs commits an object manifest; the node must own Bucket.
//
// From the manifests upgrade on (genesis upgrades.manifestsHeight) the
// write is versioned: concurrent writes are group-committed, Condition is
// checked against the object's current version when the transaction
// executes, and Attributes (opaque, at most the genesis maxAttributeBytes)
// are stored with the manifest. With Wait, a failed condition answers
// CodePreconditionFailed (PreconditionData), a chunk another live object
// holds or that was released CodeConflict (ConflictData). Before the
// upgrade, a write with a condition or attributes answers CodeNotReady
// (reason "not_activated").
type PutManifestArgs struct {
	Bucket      string     `json:"bucket"`
	Key         string     `json:"key"`
	Size        uint64     `json:"size"`
	ContentHash ID         `json:"contentHash"`
	Chunks      []Chunk    `json:"chunks"`
	Deleted     bool       `json:"deleted,omitempty"`
	Attributes  []byte     `json:"attributes,omitempty"`
	Condition   *Condition `json:"condition,omitempty"`
	// Adopt takes over chunks another live object holds (a move) instead
	// of answering CodeConflict (ManifestEntry.Adopt).
	Adopt  bool   `json:"adopt,omitempty"`
	Wait   Wait   `json:"wait,omitempty"`
	WaitMs uint64 `json:"waitMs,omitempty"`
	// ThenGet, with Wait, is a key of Bucket the node reads once the write
	// is accepted, from its accepted state at the write's height or later
	// (the reply's Then): a read the writer makes next (a filer checks the
	// new entry's directory) rides the write's exchange. A node that does
	// not know the field answers no Then; the caller reads on its own.
	ThenGet string `json:"thenGet,omitempty"`
	// OwnEntry: the reply's receipt carries this write's entry only (see
	// ReceiptReply.First).
	OwnEntry bool `json:"ownEntry,omitempty"`
}

// PutManifestReply names the transaction and entry. Version is the
// object's new version, known once the transaction is accepted (with
// Wait); 0 for the deletion of an object that was not live.
type PutManifestReply struct {
	TxID         ID            `json:"txID"`
	Index        int           `json:"index"`
	PChainHeight uint64        `json:"pChainHeight"`
	Owner        NodeID        `json:"owner"`
	Receipt      *ReceiptReply `json:"receipt,omitempty"`
	Version      uint64        `json:"version,omitempty"`
	// Then answers ThenGet (nil: not asked, not accepted, or not read).
	Then *ThenReply `json:"then,omitempty"`
}

// ThenReply is the read PutManifestArgs.ThenGet asked for: the manifest at
// Key, or none (Manifest nil).
type ThenReply struct {
	Key      string         `json:"key"`
	Manifest *ManifestReply `json:"manifest,omitempty"`
}

// Receipt statuses.
const (
	StatusPending  = "pending"
	StatusAccepted = "accepted"
	StatusRejected = "rejected"
	StatusUnknown  = "unknown"
)

// TxIDArgs names a transaction.
type TxIDArgs struct {
	TxID ID `json:"txID"`
	AtLeast
}

// WaitReceiptArgs asks for a transaction's receipt once it is decided
// (Wait "accepted", the default) or final ("final"), waiting at most
// min(WaitMs, the node's maxWaitMs).
type WaitReceiptArgs struct {
	TxID   ID     `json:"txID"`
	Wait   Wait   `json:"wait,omitempty"`
	WaitMs uint64 `json:"waitMs,omitempty"`
}

// ReceiptReply is a transaction's fate. Accepted receipts carry the
// entries (ids reserved, objects written) and the block height. A pending
// transaction that was re-signed for a new membership names its
// replacement.
//
// Final is set once a finality certificate covers the block: Certificate
// is the lowest one at or above Height (CertifiedBy is its height; above
// Height, the certified block descends from the receipt's, which the
// blocks in between prove: getBlock). Check it offline against the P-chain
// validator set with certificate.Verify or `schain verify`.
type ReceiptReply struct {
	Head
	TxID    ID             `json:"txID"`
	Status  string         `json:"status"`
	Height  uint64         `json:"height,omitempty"`
	Entries []ReceiptEntry `json:"entries,omitempty"`
	// First is the index in the transaction of Entries[0]. A write that
	// asked for its own entry (OwnEntry) gets that entry alone, at First =
	// its Index: the owner group-commits many callers' writes into one
	// transaction, and a reply repeating every entry of the group costs
	// the owner and each caller work that grows with the group. A node
	// that does not know OwnEntry answers every entry (First 0). Read
	// entries with Entry.
	First       int          `json:"first,omitempty"`
	Error       string       `json:"error,omitempty"`
	ReplacedBy  *ID          `json:"replacedBy,omitempty"`
	Final       bool         `json:"final,omitempty"`
	CertifiedBy uint64       `json:"certifiedBy,omitempty"`
	Certificate *Certificate `json:"certificate,omitempty"`
}

// Entry is the receipt's entry at index i of the transaction; false if the
// receipt does not carry it. A negative First (no node sends one) carries
// nothing, so that i-First cannot overflow into a negative index.
func (r *ReceiptReply) Entry(i int) (ReceiptEntry, bool) {
	if r.First < 0 || i < r.First || i-r.First >= len(r.Entries) {
		return ReceiptEntry{}, false
	}
	return r.Entries[i-r.First], true
}

// HeightArgs names an accepted block by height.
type HeightArgs struct {
	Height uint64 `json:"height"`
	AtLeast
}

// CertificateReply is the finality certificate covering a height: the
// lowest one at or above it. CodeNotReady (reason "not_final") while none
// does yet.
type CertificateReply struct {
	Head
	Height      uint64      `json:"height"`
	Certificate Certificate `json:"certificate"`
}

// BlockReply is an accepted block: its ID is the SHA-256 of Bytes, whose
// encoding (package vm/block) names the parent, height, state root and
// transactions. A client walks parents from a certified block down to a
// receipt's to prove the certificate covers it.
type BlockReply struct {
	Head
	Height uint64 `json:"height"`
	ID     ID     `json:"id"`
	Bytes  string `json:"bytes"` // 0x-prefixed hex
}

// RangeArgs names a range.
type RangeArgs struct {
	Range string `json:"range"`
	AtLeast
}

// AllocationReply is a range's next unissued id in accepted state.
type AllocationReply struct {
	Head
	Range string `json:"range"`
	Next  uint64 `json:"next"`
}

// ManifestArgs names an object.
type ManifestArgs struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	AtLeast
	OwnerRead
}

// OwnerRead asks for a read at the bucket's owner. The owner answers a
// waited write only once it accepted it, so a read there sees every write
// acknowledged before it, whoever made it, provided the node answering is
// still the owner and current: with AsOwner set, a node that is not the
// bucket's owner in its membership answers NotOwner (with the owner), and
// an owner behind any block that validators holding more than a third of
// the stake accepted answers NotReady (behind_peers). Older nodes ignore
// the field.
type OwnerRead struct {
	AsOwner bool `json:"asOwner,omitempty"`
}

// ManifestReply is an accepted manifest: the object's newest record (a
// tombstone for a deleted object) with its version, the height that wrote
// it and its attributes. A manifest written before the manifests upgrade
// is version 0.
type ManifestReply struct {
	Head
	Manifest   Manifest `json:"manifest"`
	Version    uint64   `json:"version"`
	Height     uint64   `json:"height"`
	Attributes []byte   `json:"attributes,omitempty"`
}

// OwnerReply is a range's owner in the membership the next block will have
// (what the node routes writes by).
type OwnerReply struct {
	Head
	Range        string `json:"range"`
	Owner        NodeID `json:"owner"`
	PChainHeight uint64 `json:"pChainHeight"`
	Fingerprint  ID     `json:"fingerprint"`
}

// Member is one member of a membership.
type Member struct {
	NodeID NodeID `json:"nodeID"`
	Weight uint64 `json:"weight"`
}

// MembershipReply is the membership the next block will have: the members
// ranges are pinned to (the live validators, or all of them as a fallback)
// and, for each validator of the P-chain set, what the chain knows of its
// liveness.
type MembershipReply struct {
	Head
	PChainHeight uint64 `json:"pChainHeight"`
	// Round is the liveness round (block timestamp / RoundDurationMs).
	Round       uint64 `json:"round"`
	Fingerprint ID     `json:"fingerprint"`
	// Generation counts membership changes along the chain.
	Generation uint64 `json:"generation"`
	// Fallback: no validator was live, so all of them are members.
	Fallback bool     `json:"fallback"`
	Members  []Member `json:"members"`
	// Validators is the whole P-chain set at PChainHeight.
	Validators      []ValidatorLiveness `json:"validators"`
	RoundDurationMs uint64              `json:"roundDurationMs"`
	LivenessRounds  uint64              `json:"livenessRounds"`
	NodeID          NodeID              `json:"nodeID"`
}

// ValidatorLiveness is one P-chain validator as the liveness rule sees it.
type ValidatorLiveness struct {
	NodeID NodeID `json:"nodeID"`
	Weight uint64 `json:"weight"`
	// Member: ranges are pinned to it in this membership.
	Member bool `json:"member"`
	// FirstSeen is the liveness round its grace started in; LastHeartbeat
	// the newest round with an accepted heartbeat (absent: none yet).
	FirstSeen     *uint64 `json:"firstSeen,omitempty"`
	LastHeartbeat *uint64 `json:"lastHeartbeat,omitempty"`
	// RoundsOut counts the consecutive rounds that had a block in which it
	// was not a member (upgrades.removalsHeight); RemovalDecided is the
	// round in which the chain decided to remove it from the P-chain set.
	RoundsOut      uint64  `json:"roundsOut,omitempty"`
	RemovalDecided *uint64 `json:"removalDecided,omitempty"`
}

// NodeReply identifies the node behind an endpoint, so a client can route
// each range to its owner.
type NodeReply struct {
	Head
	NodeID    NodeID `json:"nodeID"`
	NetworkID uint32 `json:"networkID"`
	ChainID   ID     `json:"chainID"`
	// LastAccepted height and state root, to compare nodes.
	Height    uint64 `json:"height"`
	StateRoot ID     `json:"stateRoot"`
	// DirectURI, when the node's chain config sets directAPI, is the base
	// URI at which the plugin serves this same API itself (append
	// /ext/bc/<chainID> as for the node's): the same methods, tokens and
	// limits without the node's HTTP hop.
	DirectURI string `json:"directURI,omitempty"`
	// NotReady names why the node answers reads NotReady now
	// ("bootstrapping", "behind_peers"), empty when it does not. getNode
	// itself always answers, so that a client can tell who is behind.
	NotReady string `json:"notReady,omitempty"`
}

// Empty is the argument of methods without parameters.
type Empty struct{}

// ReadArgs is the argument of reads without other parameters
// (getMembership, getNode).
type ReadArgs struct {
	AtLeast
}

// LeaseArgs asks a range's owner for one lease operation: acquireLease
// (Holder, TTLMs), renewLease (Holder, Token, TTLMs) or releaseLease
// (Holder, Token). The owner signs it and the call waits until the block
// that carries it is accepted, at most min(WaitMs, the node's maxWaitMs):
// that block's time decides. A holder counts its lease from before the
// call, TTLMs long, less the chain's clock skew (genesis maxTimeSkewMs),
// and renews well within it; a lease it cannot renew in time is lost, and
// its fencing token refused from then on.
type LeaseArgs struct {
	Range  string `json:"range"`
	Holder string `json:"holder"`
	Token  uint64 `json:"token,omitempty"`
	TTLMs  uint64 `json:"ttlMs,omitempty"`
	WaitMs uint64 `json:"waitMs,omitempty"`
}

// LeaseReply is what a granted operation left: the lease (empty after a
// release), decided by the block at Height, whose time was the lease's
// clock.
type LeaseReply struct {
	TxID    ID     `json:"txID"`
	Height  uint64 `json:"height"`
	Range   string `json:"range"`
	Outcome string `json:"outcome"`
	Holder  string `json:"holder,omitempty"`
	// Token is the grant's fencing token: it only grows for a range, so a
	// resource that remembers the highest token it saw refuses a stale
	// holder.
	Token     uint64 `json:"token,omitempty"`
	ExpiresMs uint64 `json:"expiresMs,omitempty"`
}

// LeaseData is the lease that stands (Holder empty: nobody holds it) in a
// CodeLeaseHeld or CodeLeaseLost answer, and the transaction that found it
// (empty when the owner answered from accepted state without one).
type LeaseData struct {
	Range     string `json:"range"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	ExpiresMs uint64 `json:"expiresMs,omitempty"`
	TxID      ID     `json:"txID"`
}

// LeaseStateReply is a range's lease in accepted state: the last grant
// (Holder empty: released or never granted), whether it holds at the last
// accepted block's time (AtMs), and the last fencing token the range
// granted.
type LeaseStateReply struct {
	Head
	Range     string `json:"range"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	ExpiresMs uint64 `json:"expiresMs,omitempty"`
	Held      bool   `json:"held"`
	Fence     uint64 `json:"fence"`
	AtMs      uint64 `json:"atMs"`
}

// ReceiptEntry is one entry's outcome in a receipt (state.ReceiptEntry,
// which converts to it field for field): the ids an allocate entry
// reserved ([Base, Base+Count) in Range), the object a manifest entry
// wrote (Bucket, Key, Deleted, Version), or the chunk a reclaim entry took
// off its released list (Range, ID). Refused is the reason an entry wrote
// nothing (an errcode reason such as "precondition_failed"), Detail what
// stood in the way, Current the object's version when its precondition
// failed. A lease entry's outcome is Lease (state.LeaseOutcome), with the
// lease of Range the block left: Holder, Token, ExpiresMs (empty when
// nobody holds it).
type ReceiptEntry struct {
	Range   string `json:"range,omitempty"`
	Base    uint64 `json:"base,omitempty"`
	Count   uint64 `json:"count,omitempty"`
	Bucket  string `json:"bucket,omitempty"`
	Key     string `json:"key,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	Version uint64 `json:"version,omitempty"`
	Refused string `json:"refused,omitempty"`
	Detail  string `json:"detail,omitempty"`
	Current uint64 `json:"current,omitempty"`
	ID      uint64 `json:"id,omitempty"`
	// The lease fields.
	Lease     string `json:"lease,omitempty"`
	Holder    string `json:"holder,omitempty"`
	Token     uint64 `json:"token,omitempty"`
	ExpiresMs uint64 `json:"expiresMs,omitempty"`
}

// Chunk is one chunk of an object: an id allocated in Range, its size and
// content hash (txs.Chunk).
type Chunk struct {
	Range string `json:"range"`
	ID    uint64 `json:"id"`
	Size  uint64 `json:"size"`
	Hash  ID     `json:"hash"`
}

// Manifest is an object's manifest (txs.Manifest).
type Manifest struct {
	Bucket      string  `json:"bucket"`
	Key         string  `json:"key"`
	Size        uint64  `json:"size"`
	ContentHash ID      `json:"contentHash"`
	Chunks      []Chunk `json:"chunks"`
	Deleted     bool    `json:"deleted"`
}

// Certificate is a finality certificate (certificate.Certificate) as the
// API writes it: the statement's fields, the signer bitset and the
// aggregate BLS signature in 0x-prefixed hex.
type Certificate struct {
	NetworkID    uint32 `json:"networkID"`
	ChainID      ID     `json:"chainID"`
	Height       uint64 `json:"height"`
	BlockID      ID     `json:"blockID"`
	StateRoot    ID     `json:"stateRoot"`
	PChainHeight uint64 `json:"pChainHeight"`
	Signers      string `json:"signers"`
	Signature    string `json:"signature"`
}
