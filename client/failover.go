package client

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultFailoverSlack covers two proposer slots of a dead validator
// (avalanchego's proposer VM gives each 5 s) beyond the liveness bound.
const DefaultFailoverSlack = 10 * time.Second

// Used while no node has said how long its rounds are: the genesis
// defaults (docs/operating/configuration.md), 30 s rounds and K = 2.
const (
	defaultRound          = 30 * time.Second
	defaultLivenessRounds = 2
	// boundTTL is how long a failover bound read from a membership is
	// reused; rounds and K change only with the chain's genesis.
	boundTTL = 5 * time.Minute
)

// What one node's membership answer may make a write wait: a node
// naming absurd rounds (a hostile or broken one) must not hold writes for
// days, nor overflow the bound into a negative one.
const (
	maxRound          = time.Hour
	maxLivenessRounds = 16
)

// failoverWait is (k+1) rounds plus slack, with round and k clamped to
// maxRound and maxLivenessRounds.
func failoverWait(round time.Duration, k uint64, slack time.Duration) time.Duration {
	return time.Duration(min(k, maxLivenessRounds)+1)*min(round, maxRound) + slack
}

// ownerDown reports whether err says a write's owner cannot be reached or
// cannot answer now: what a move of its ranges ends.
func ownerDown(err error) bool {
	return errors.Is(err, ErrTransport) || errors.Is(err, ErrNotReady)
}

// failoverBound caches how long a write waits for a dead owner's ranges to
// move: (K+1) rounds of the chain's membership plus RouterConfig's slack.
// It is safe for concurrent use.
type failoverBound struct {
	mu    sync.Mutex // guards d and at
	d     time.Duration
	at    time.Time
	known bool
}

// get returns the bound, reading the membership from any node when the
// cached one is older than boundTTL; the genesis defaults' bound when no
// node answers.
func (b *failoverBound) get(ctx context.Context, r *Router) time.Duration {
	b.mu.Lock()
	if b.known && time.Since(b.at) < boundTTL {
		defer b.mu.Unlock()
		return b.d
	}
	b.mu.Unlock()
	round, k := defaultRound, uint64(defaultLivenessRounds)
	known := false
	if m, err := readAny(ctx, r, func(ctx context.Context, e *endpoint) (*struct{ ms, k uint64 }, error) {
		m, err := e.c.GetMembership(ctx)
		if err != nil {
			return nil, err
		}
		return &struct{ ms, k uint64 }{m.RoundDurationMs, m.LivenessRounds}, nil
	}); err == nil && m.ms > 0 {
		round, k, known = time.Duration(min(m.ms, uint64(maxRound/time.Millisecond)))*time.Millisecond, m.k, true
	}
	d := failoverWait(round, k, r.cfg.FailoverSlack)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.d, b.at, b.known = d, time.Now(), known
	return d
}
