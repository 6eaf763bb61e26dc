package schainseq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Lease codes of the S-Chain API (vm/api); a test of this module checks
// that they match.
const (
	codeLeaseHeld = -32021
	codeLeaseLost = -32022
)

var (
	// ErrLeaseHeld: another holder holds the lease (LeaseError names it).
	ErrLeaseHeld = errors.New("S-Chain lease held by another holder")
	// ErrLeaseLost: the grant is no longer the range's (it expired, was
	// released or taken over): its fencing token is refused.
	ErrLeaseLost = errors.New("S-Chain lease lost")
)

// Lease is a grant of an S-Chain lease: one holder has Range until
// ExpiresMs (unix milliseconds of block time), and Token, its fencing
// token, only grows for the range. A zero Lease is no grant.
type Lease struct {
	Range     string `json:"range"`
	Holder    string `json:"holder"`
	Token     uint64 `json:"token"`
	ExpiresMs uint64 `json:"expiresMs"`
}

// LeaseError is a lease operation that did nothing, with the lease that
// stands (Standing.Holder empty: nobody holds it).
type LeaseError struct {
	Held     bool
	Standing Lease
}

func (e *LeaseError) Error() string {
	what := ErrLeaseLost
	if e.Held {
		what = ErrLeaseHeld
	}
	if e.Standing.Holder == "" {
		return fmt.Sprintf("%v: %s: nobody holds it", what, e.Standing.Range)
	}
	return fmt.Sprintf("%v: %s is held by %s (token %d)", what, e.Standing.Range, e.Standing.Holder, e.Standing.Token)
}

func (e *LeaseError) Unwrap() error {
	if e.Held {
		return ErrLeaseHeld
	}
	return ErrLeaseLost
}

type leaseArgs struct {
	Range  string `json:"range"`
	Holder string `json:"holder"`
	Token  uint64 `json:"token,omitempty"`
	TTLMs  uint64 `json:"ttlMs,omitempty"`
	WaitMs uint64 `json:"waitMs,omitempty"`
}

// AcquireLease takes rng's lease for holder for ttl from the time of the
// block that grants it. The holder counts it from before the call, less
// the chain's clock skew.
func (c *Client) AcquireLease(ctx context.Context, rng, holder string, ttl time.Duration) (Lease, error) {
	return c.lease(ctx, "acquireLease", leaseArgs{Range: rng, Holder: holder, TTLMs: ttlMs(ttl)})
}

// RenewLease moves the expiry of grant l to ttl after the block's time, or
// fails with ErrLeaseLost once l is no longer the range's.
func (c *Client) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return c.lease(ctx, "renewLease", leaseArgs{Range: l.Range, Holder: l.Holder, Token: l.Token, TTLMs: ttlMs(ttl)})
}

// ReleaseLease ends grant l.
func (c *Client) ReleaseLease(ctx context.Context, l Lease) error {
	_, err := c.lease(ctx, "releaseLease", leaseArgs{Range: l.Range, Holder: l.Holder, Token: l.Token})
	return err
}

// LeaseOf reads rng's last grant in accepted state, and whether it holds
// at the last accepted block's time.
func (c *Client) LeaseOf(ctx context.Context, rng string) (Lease, bool, error) {
	var rep struct {
		Lease
		Held bool `json:"held"`
	}
	var last error
	for attempt := 0; ; attempt++ {
		err := c.read(ctx, "getLease", map[string]string{"range": rng}, &rep)
		if err == nil {
			rep.Range = rng
			return rep.Lease, rep.Held, nil
		}
		if !errors.Is(err, ErrUnreachable) && !isCode(err, codeNotReady) {
			return Lease{}, false, err
		}
		last = err
		if serr := pause(ctx, backoff(attempt, err)); serr != nil {
			return Lease{}, false, fmt.Errorf("%w: reading the lease of %q: %w (last error: %w)", ErrUnreachable, rng, serr, last)
		}
	}
}

func ttlMs(d time.Duration) uint64 { return uint64(max(d, time.Millisecond) / time.Millisecond) }

// lease sends one lease operation to its range's owner, which answers once
// the block that decides it is accepted.
func (c *Client) lease(ctx context.Context, method string, args leaseArgs) (Lease, error) {
	var last error
	for attempt := 0; ; attempt++ {
		n, err := c.route(ctx, args.Range)
		if err == nil {
			var rep Lease
			call := args
			call.WaitMs = waitMs(ctx)
			if err = c.call(ctx, n, method, call, &rep, true); err == nil {
				return rep, nil
			}
			var re *RPCError
			if errors.As(err, &re) && (re.Code == codeLeaseHeld || re.Code == codeLeaseLost) {
				le := &LeaseError{Held: re.Code == codeLeaseHeld}
				_ = json.Unmarshal(re.Data, &le.Standing)
				le.Standing.Range = args.Range
				return Lease{}, le
			}
		}
		if !c.retry(args.Range, err) {
			return Lease{}, fmt.Errorf("%s of %q: %w", method, args.Range, err)
		}
		last = err
		if serr := pause(ctx, backoff(attempt, err)); serr != nil {
			return Lease{}, fmt.Errorf("%w: %s of %q: %w (last error: %w)", ErrUnreachable, method, args.Range, serr, last)
		}
	}
}
