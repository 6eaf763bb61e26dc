package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/s-chain/schain/api"
)

// maxReplacements bounds how many re-pins WaitForReceipt follows; a chain of
// replacements longer than this is a loop or a node bug, not progress.
const maxReplacements = 32

var (
	errBadRetry        = errors.New("invalid retry policy")
	errReplacementLoop = errors.New("replacement chain loops or is too long")
	errNotFinalYet     = errors.New("not final yet")
)

// Retry bounds the Router's retries and WaitForReceipt's polling. The
// caller's context deadline is the overall bound; these keep a deadline-less
// context from retrying forever and keep back-offs short enough to notice
// recovery.
type Retry struct {
	// Initial is the first back-off; each retry doubles it up to Max.
	Initial time.Duration
	// Max caps one back-off (before jitter).
	Max time.Duration
	// MaxAttempts caps the attempts of one call (WaitForReceipt polls until
	// decided or its context ends, whatever this says).
	MaxAttempts int
	// MaxRetryAfter caps a node's MempoolFull (or TooManyRequests) RetryAfterMs, so that a
	// misconfigured node cannot park clients for hours.
	MaxRetryAfter time.Duration
}

// DefaultRetry gives up after about ten seconds of a node that never
// recovers, if the caller's context allows that long. Its back-off stays
// at or under half a second: when a dead owner's ranges move, their new
// owners' first writes go into the block after the one that moves them,
// and a client that comes back later waits for another height, which may
// cost 5 s per proposer slot drawn for the dead validator
// (docs/concepts/liveness.md, "What a failover waits for"); with a 2 s cap, a third
// of the ranges in some bench runs came back one such height later. A
// 50 ms start does not hammer a node that answered NotReady (its hint, up
// to MaxRetryAfter, wins) and still retries a lost connection at once.
// It is every caller's policy, the SeaweedFS master's too (the patch copies
// this package), which only lifts MaxAttempts: its own deadlines end its
// calls.
func DefaultRetry() Retry {
	return Retry{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond, MaxAttempts: 24, MaxRetryAfter: 10 * time.Second}
}

// Verify checks the bounds.
func (r Retry) Verify() error {
	if r.Initial <= 0 || r.Max < r.Initial || r.MaxAttempts < 1 || r.MaxRetryAfter < 0 {
		return fmt.Errorf("%w: %+v", errBadRetry, r)
	}
	return nil
}

// delay is the back-off before retry number attempt (1-based): exponential,
// capped, with "equal jitter" so that clients that failed together do not
// retry together yet never retry sooner than half the nominal delay.
func (r Retry) delay(attempt int) time.Duration {
	d := r.Initial
	for i := 1; i < attempt && d < r.Max; i++ {
		d *= 2
	}
	d = min(d, r.Max)
	half := d / 2
	return half + rand.N(half+1)
}

// backoff is the delay after err: at least what a MempoolFull or
// TooManyRequests node asked for.
func (r Retry) backoff(attempt int, err error) time.Duration {
	d := r.delay(attempt)
	data, ok := IsMempoolFull(err)
	if !ok {
		data, ok = IsTooManyRequests(err)
	}
	if ok {
		after := min(time.Duration(data.RetryAfterMs)*time.Millisecond, r.MaxRetryAfter)
		d = max(d, after)
	}
	return d
}

// sleep waits d unless ctx ends first. It gives up at once if ctx's deadline
// would pass during the wait: sleeping only to fail helps nobody. last is the
// error being retried, wrapped so the caller learns why it gave up.
func sleep(ctx context.Context, d time.Duration, last error) error {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return fmt.Errorf("%w: deadline comes before the next retry in %v; last error: %w",
			context.DeadlineExceeded, d.Round(time.Millisecond), last)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w; last error: %w", context.Cause(ctx), last)
	case <-t.C:
		return nil
	}
}

// waitForReceipt polls get until txID, or the transaction that replaced it,
// is accepted or rejected. It returns the final receipt (and ErrTxRejected
// if rejected); when ctx ends it returns the last receipt seen, if any.
func waitForReceipt(ctx context.Context, txID api.ID, retry Retry, until api.Wait,
	get func(context.Context, api.ID) (*api.ReceiptReply, error),
) (*api.ReceiptReply, error) {
	seen := map[api.ID]bool{txID: true}
	var last *api.ReceiptReply
	for attempt := 1; ; attempt++ {
		rc, err := get(ctx, txID)
		if err == nil {
			last = rc
			switch {
			case rc.Status == api.StatusAccepted && (until != api.WaitFinal || rc.Final):
				return rc, nil
			case rc.Status == api.StatusAccepted:
				err = fmt.Errorf("%w: transaction %s accepted at height %d, not final yet", errNotFinalYet, txID, rc.Height)
				if serr := sleep(ctx, retry.backoff(attempt, err), err); serr != nil {
					return last, serr
				}
				continue
			case rc.Status == api.StatusRejected:
				return rc, fmt.Errorf("%w: %s: %s", ErrTxRejected, txID, rc.Error)
			case rc.ReplacedBy != nil && *rc.ReplacedBy != txID:
				next := *rc.ReplacedBy
				if seen[next] || len(seen) > maxReplacements {
					return rc, fmt.Errorf("%w: %s replaced by %s", errReplacementLoop, txID, next)
				}
				seen[next] = true
				txID, attempt = next, 0
				continue
			}
			err = fmt.Errorf("transaction %s still %s", txID, rc.Status)
		} else if !retryable(err) {
			return last, err
		}
		if serr := sleep(ctx, retry.backoff(attempt, err), err); serr != nil {
			return last, serr
		}
	}
}
