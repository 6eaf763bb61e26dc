package writer

import (
	"sync"
	"time"
)

// Gossip may make this node look up the validator set of a P-chain height
// it has not cached (a call into the node, and an entry evicted from the
// cache) only within a budget: a burst of MaxLookupBurst, refilled at one
// per lookupRefill. Honest transactions are pinned to heights this node
// already holds (the membership in force, the newest height its own
// heartbeats use, the blocks it verifies), so the budget only bounds what
// junk costs; a transaction refused for it is offered again by gossip.
const (
	MaxLookupBurst = 8
	lookupRefill   = 250 * time.Millisecond
)

// lookupBudget is a token bucket on the writer's clock. It is safe for
// concurrent use.
type lookupBudget struct {
	mu     sync.Mutex // guards the fields below
	tokens int
	since  time.Time // when the last token was added (zero: never)
}

// take spends one lookup at now, or reports that none is left.
func (b *lookupBudget) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since.IsZero() {
		b.tokens, b.since = MaxLookupBurst, now
	}
	if earned := int(now.Sub(b.since) / lookupRefill); earned > 0 {
		b.tokens = min(MaxLookupBurst, b.tokens+earned)
		b.since = b.since.Add(time.Duration(earned) * lookupRefill)
	}
	if b.tokens == 0 {
		return false
	}
	b.tokens--
	return true
}
