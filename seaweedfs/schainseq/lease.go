package schainseq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
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

// AcquireLease takes rng's lease for holder for ttl from the time of the
// block that grants it. The holder counts it from before the call, less
// the chain's clock skew.
func (c *chainClient) AcquireLease(ctx context.Context, rng, holder string, ttl time.Duration) (Lease, error) {
	return c.lease(ctx, c.r.AcquireLease, api.LeaseArgs{Range: rng, Holder: holder, TTLMs: ttlMs(ttl)})
}

// RenewLease moves the expiry of grant l to ttl after the block's time, or
// fails with ErrLeaseLost once l is no longer the range's.
func (c *chainClient) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	return c.lease(ctx, c.r.RenewLease, api.LeaseArgs{Range: l.Range, Holder: l.Holder, Token: l.Token, TTLMs: ttlMs(ttl)})
}

// ReleaseLease ends grant l.
func (c *chainClient) ReleaseLease(ctx context.Context, l Lease) error {
	_, err := c.lease(ctx, c.r.ReleaseLease, api.LeaseArgs{Range: l.Range, Holder: l.Holder, Token: l.Token})
	return err
}

// LeaseOf reads rng's last grant in accepted state, and whether it holds
// at the last accepted block's time.
func (c *chainClient) LeaseOf(ctx context.Context, rng string) (Lease, bool, error) {
	rep, err := c.r.GetLease(ctx, rng)
	if err != nil {
		return Lease{}, false, fmt.Errorf("reading the lease of %q: %w", rng, err)
	}
	return Lease{Range: rng, Holder: rep.Holder, Token: rep.Token, ExpiresMs: rep.ExpiresMs}, rep.Held, nil
}

func ttlMs(d time.Duration) uint64 { return uint64(max(d, time.Millisecond) / time.Millisecond) }

// lease sends one lease operation to its range's owner (client.Router),
// which answers once the block that decides it is accepted; a lease that
// stands in the way is a *LeaseError.
func (c *chainClient) lease(ctx context.Context, op func(context.Context, api.LeaseArgs) (*api.LeaseReply, error), args api.LeaseArgs) (Lease, error) {
	if deadline, ok := ctx.Deadline(); ok {
		args.WaitMs = uint64(max(time.Until(deadline)-answerMargin, time.Millisecond) / time.Millisecond)
	}
	rep, err := op(ctx, args)
	held, isHeld := client.IsLeaseHeld(err)
	lost, isLost := client.IsLeaseLost(err)
	switch {
	case isHeld:
		return Lease{}, &LeaseError{Held: true, Standing: Lease{Range: args.Range, Holder: held.Holder, Token: held.Token, ExpiresMs: held.ExpiresMs}}
	case isLost:
		return Lease{}, &LeaseError{Standing: Lease{Range: args.Range, Holder: lost.Holder, Token: lost.Token, ExpiresMs: lost.ExpiresMs}}
	case err != nil:
		return Lease{}, fmt.Errorf("lease of %q: %w", args.Range, err)
	}
	return Lease{Range: rep.Range, Holder: rep.Holder, Token: rep.Token, ExpiresMs: rep.ExpiresMs}, nil
}
