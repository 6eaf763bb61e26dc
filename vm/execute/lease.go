package execute

import (
	"fmt"
	"math/bits"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/errcode"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
)

var (
	// ErrLeaseHeld: an acquire found another holder's unexpired grant. The
	// chain records it as a receipt outcome (state.LeaseHeld); the API
	// answers a caller who waited for it with this code.
	ErrLeaseHeld = errcode.New(errcode.LeaseHeld, "lease_held", "execute: the lease is held by another holder")
	// ErrLeaseLost: a renew or release named a grant that is no longer the
	// range's (expired, released, or another holder's): its fencing token
	// is refused.
	ErrLeaseLost = errcode.New(errcode.LeaseLost, "lease_lost", "execute: the lease grant is no longer held (expired, released or taken over)")
)

// LeaseError is a lease operation that did nothing (state.LeaseHeld or
// state.LeaseLost), with the lease that stands (zero Lease: nobody holds
// it) and the transaction whose receipt said so (empty when the owner
// answered from accepted state before signing one).
type LeaseError struct {
	Range   string
	Outcome state.LeaseOutcome
	Lease   state.Lease
	TxID    ids.ID
	// Backdated, when set, is why the owner answers a grant or renewal
	// the chain decided as lost: its block was dated too far behind the
	// owner's clock (writer.LeaseAnswer). Lease is then the decided grant.
	Backdated *Backdated
}

// Backdated is a lease grant or renewal whose block time lies too far
// behind the owner's clock for the holder to count it as held: a block's
// time is bounded below only by its parent's, so a proposer may date it
// back to an idle chain's last block.
type Backdated struct {
	// BlockMs is the deciding block's time, AskedMs the owner's clock when
	// the request arrived, ClockMs when the answer was built, SkewMs the
	// genesis's maxTimeSkewMs (unix ms, ms).
	BlockMs, AskedMs, ClockMs, SkewMs uint64
}

func (e *LeaseError) sentinel() *errcode.Error {
	if e.Outcome == state.LeaseHeld {
		return ErrLeaseHeld
	}
	return ErrLeaseLost
}

func (e *LeaseError) Error() string {
	if b := e.Backdated; b != nil {
		if e.Lease.ExpiresMs <= b.ClockMs {
			return fmt.Sprintf("%s: range %q: the block that decided it (time %d ms) gave holder %q (token %d) an expiry of %d ms, already past at this owner's clock (%d ms): it is not held (hint: the block was dated behind the clock; acquire the lease afresh)",
				e.sentinel(), e.Range, b.BlockMs, e.Lease.Holder, e.Lease.Token, e.Lease.ExpiresMs, b.ClockMs)
		}
		return fmt.Sprintf("%s: range %q: the block that decided it is dated %d ms, more than maxTimeSkewMs (%d) before this owner received the request (%d ms): a holder counting its TTL from its request would outlive the chain's expiry (%d ms), so it is not answered as held (hint: renew it again, holder %q token %d, or acquire it afresh once it expired)",
			e.sentinel(), e.Range, b.BlockMs, b.SkewMs, b.AskedMs, e.Lease.ExpiresMs, e.Lease.Holder, e.Lease.Token)
	}
	if e.Lease.Holder == "" {
		return fmt.Sprintf("%s: range %q: nobody holds it", e.sentinel(), e.Range)
	}
	return fmt.Sprintf("%s: range %q is held by %q (token %d) until %d ms", e.sentinel(), e.Range, e.Lease.Holder, e.Lease.Token, e.Lease.ExpiresMs)
}

func (e *LeaseError) Is(target error) bool {
	return target == e.sentinel() || target == e.sentinel().Code().Class()
}

// Code and Reason are the API identity of ErrLeaseHeld or ErrLeaseLost.
func (e *LeaseError) Code() errcode.Code { return e.sentinel().Code() }
func (e *LeaseError) Reason() string     { return e.sentinel().Reason() }

// Lease decides each entry by the block's time (DecideLease), the only
// clock a lease expires by, so that every validator reaches the same
// outcome. Every entry gets a receipt outcome; none fails the transaction,
// so a refused acquire costs its owner a receipt, not an eviction.
func (e *executor) Lease(t *txs.LeaseTx) error {
	for i, en := range t.Entries {
		cur, ok, err := e.r.Lease(en.Range)
		if err != nil {
			return err
		}
		fence, err := e.r.Fence(en.Range)
		if err != nil {
			return err
		}
		rc, u, err := DecideLease(en, cur, ok, fence, e.c.Time)
		if err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if u != nil {
			e.out.Leases = append(e.out.Leases, *u)
		}
		e.out.Receipt.Entries = append(e.out.Receipt.Entries, rc)
	}
	return nil
}

// DecideLease is the rule of one lease entry at block time now, given the
// range's lease (cur, if ok) and last fencing token: its receipt entry and
// the update it writes (nil: none).
//
//   - acquire: granted, with the range's next fencing token and an expiry of
//     now + TTL, unless another grant is unexpired (held; the receipt names
//     it). An unexpired grant of the same holder name is held too: a name
//     may be shared by processes, a grant never is.
//   - renew: the expiry of the holder's unexpired grant Token moves to now +
//     TTL; an expired, released or other grant is lost.
//   - release: the holder's grant Token ends (expired or not); any other is
//     lost.
func DecideLease(en txs.LeaseEntry, cur state.Lease, ok bool, fence, now uint64) (state.ReceiptEntry, *state.LeaseUpdate, error) {
	live := ok && cur.Held(now)
	mine := ok && cur.Holder == en.Holder && cur.Token == en.Token
	rc := state.ReceiptEntry{Range: en.Range}
	if live {
		rc.Holder, rc.Token, rc.ExpiresMs = cur.Holder, cur.Token, cur.ExpiresMs
	}
	var u *state.LeaseUpdate
	switch {
	case en.Op == txs.LeaseAcquire && live:
		rc.Lease = state.LeaseHeld
	case en.Op == txs.LeaseAcquire:
		if fence == ^uint64(0) {
			return rc, nil, fmt.Errorf("%w: fencing tokens of %q", ErrCounterOverflow, en.Range)
		}
		grant, err := leaseUntil(en, fence+1, now)
		if err != nil {
			return rc, nil, err
		}
		rc.Lease = state.LeaseGranted
		u = &state.LeaseUpdate{Range: en.Range, Lease: &grant, Fence: grant.Token}
	case en.Op == txs.LeaseRenew && live && mine:
		grant, err := leaseUntil(en, cur.Token, now)
		if err != nil {
			return rc, nil, err
		}
		rc.Lease = state.LeaseRenewed
		u = &state.LeaseUpdate{Range: en.Range, Lease: &grant}
	case en.Op == txs.LeaseRelease && mine:
		rc.Lease, rc.Holder, rc.Token, rc.ExpiresMs = state.LeaseReleased, "", 0, 0
		u = &state.LeaseUpdate{Range: en.Range}
	default:
		rc.Lease = state.LeaseLost
	}
	if u != nil && u.Lease != nil {
		rc.Holder, rc.Token, rc.ExpiresMs = u.Lease.Holder, u.Lease.Token, u.Lease.ExpiresMs
	}
	return rc, u, nil
}

// leaseUntil is en's holder's grant token, expiring TTL after block time now.
func leaseUntil(en txs.LeaseEntry, token, now uint64) (state.Lease, error) {
	expires, carry := bits.Add64(now, en.TTLMs, 0)
	if carry != 0 {
		return state.Lease{}, fmt.Errorf("%w: block time %d + TTL %d", ErrCounterOverflow, now, en.TTLMs)
	}
	return state.Lease{Holder: en.Holder, Token: token, ExpiresMs: expires}, nil
}
