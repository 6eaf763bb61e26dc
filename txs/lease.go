package txs

import (
	"fmt"

	"github.com/s-chain/schain/internal/wire"
)

// LeaseOp is what a lease entry asks of its range's lease.
type LeaseOp uint8

// The lease operations.
const (
	// LeaseAcquire grants the lease to Holder for TTLMs after the block's
	// time, with a new fencing token, if nobody holds it unexpired.
	LeaseAcquire LeaseOp = 1
	// LeaseRenew moves the expiry of Holder's unexpired grant Token to
	// TTLMs after the block's time.
	LeaseRenew LeaseOp = 2
	// LeaseRelease ends Holder's grant Token.
	LeaseRelease LeaseOp = 3
)

// MaxLeaseTTLMs bounds a lease's time to live: one hour. A holder renews
// well before its lease runs out; a long TTL only delays the takeover after
// the holder died.
const MaxLeaseTTLMs = 3_600_000

func (op LeaseOp) String() string {
	switch op {
	case LeaseAcquire:
		return "acquire"
	case LeaseRenew:
		return "renew"
	case LeaseRelease:
		return "release"
	}
	return fmt.Sprintf("op(%d)", uint8(op))
}

// LeaseEntry asks for one operation on the lease of Range. The range's
// owner signs it; the block that carries it decides, by its own time,
// whether it is granted (the receipt says so either way).
type LeaseEntry struct {
	Op     LeaseOp `json:"op"`
	Range  string  `json:"range"`
	Holder string  `json:"holder"`
	// Token is the fencing token of the grant renewed or released (0 for
	// an acquire).
	Token uint64 `json:"token,omitempty"`
	// TTLMs is how long after the block's time the lease lasts (acquire,
	// renew; 0 for a release).
	TTLMs uint64 `json:"ttlMs,omitempty"`
}

// LeaseTx carries lease operations on ranges of one owner, one per range.
type LeaseTx struct {
	Header
	Entries []LeaseEntry `json:"entries"`
}

const kindLease byte = 8

var _ Unsigned = (*LeaseTx)(nil)

func (t *LeaseTx) Head() *Header         { return &t.Header }
func (t *LeaseTx) Visit(v Visitor) error { return v.Lease(t) }
func (*LeaseTx) kind() byte              { return kindLease }
func (t *LeaseTx) entries() int          { return len(t.Entries) }

func (t *LeaseTx) WithHeader(h Header) Unsigned { return &LeaseTx{Header: h, Entries: t.Entries} }

// Ranges returns each entry's range: its owner decides the lease.
func (t *LeaseTx) Ranges() []string {
	rs := make([]string, len(t.Entries))
	for i, e := range t.Entries {
		rs[i] = e.Range
	}
	return rs
}

func (t *LeaseTx) encodeEntries(w *wire.Writer) {
	for _, e := range t.Entries {
		w.U8(byte(e.Op))
		w.Str(e.Range)
		w.Str(e.Holder)
		w.U64(e.Token)
		w.U64(e.TTLMs)
	}
}

func readLeaseEntry(r *wire.Reader) LeaseEntry {
	return LeaseEntry{Op: LeaseOp(r.U8()), Range: r.Str(), Holder: r.Str(), Token: r.U64(), TTLMs: r.U64()}
}

func (t *LeaseTx) verifyEntries(l Limits) error {
	seen := make(map[string]struct{}, len(t.Entries))
	for i, e := range t.Entries {
		if err := e.Verify(l); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if _, dup := seen[e.Range]; dup {
			return fmt.Errorf("entry %d: %w: lease of %s", i, ErrDuplicateEntry, e.Range)
		}
		seen[e.Range] = struct{}{}
	}
	return nil
}

// Verify checks a lease entry on its own: a known operation, a valid range
// and holder, a token exactly when the operation names a grant, and a TTL in
// 1..MaxLeaseTTLMs exactly when it sets an expiry.
func (e *LeaseEntry) Verify(l Limits) error {
	if err := VerifyRange(e.Range, l); err != nil {
		return err
	}
	if err := VerifyHolder(e.Holder, l); err != nil {
		return err
	}
	switch e.Op {
	case LeaseAcquire:
		if e.Token != 0 {
			return fmt.Errorf("%w: an acquire names no token, got %d", ErrBadLease, e.Token)
		}
	case LeaseRenew, LeaseRelease:
		if e.Token == 0 {
			return fmt.Errorf("%w: a %s names the token of its grant", ErrBadLease, e.Op)
		}
	default:
		return fmt.Errorf("%w: unknown operation %d", ErrBadLease, uint8(e.Op))
	}
	switch {
	case e.Op == LeaseRelease && e.TTLMs != 0:
		return fmt.Errorf("%w: a release has no TTL, got %d ms", ErrBadLease, e.TTLMs)
	case e.Op != LeaseRelease && (e.TTLMs == 0 || e.TTLMs > MaxLeaseTTLMs):
		return fmt.Errorf("%w: TTL %d ms not in [1, %d]", ErrBadLease, e.TTLMs, MaxLeaseTTLMs)
	}
	return nil
}

// VerifyHolder checks a lease holder's name: 1..MaxRangeLen printable ASCII
// bytes without spaces.
func VerifyHolder(h string, l Limits) error {
	if len(h) == 0 || len(h) > l.MaxRangeLen {
		return fmt.Errorf("%w: %d bytes, must be 1..%d", ErrBadHolder, len(h), l.MaxRangeLen)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: byte 0x%02x at %d (printable ASCII only, no spaces)", ErrBadHolder, c, i)
		}
	}
	return nil
}
