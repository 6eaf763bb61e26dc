package execute

import (
	"sync"

	"github.com/ava-labs/avalanchego/ids"
)

// SignatureCache remembers transactions whose signature verified. A BLS
// check costs about a millisecond, and the same transaction is verified when
// it enters the mempool, when a block is built and again for each block that
// carries it; the check is a pure function of the tx bytes (which fix owner
// and P-chain height, hence the key), so caching a success by tx ID is safe. A nil
// cache caches nothing.
type SignatureCache struct {
	mu    sync.Mutex
	limit int
	set   map[ids.ID]struct{}
	order []ids.ID // FIFO eviction ring
	next  int
}

// NewSignatureCache holds at most limit tx IDs.
func NewSignatureCache(limit int) *SignatureCache {
	return &SignatureCache{limit: max(limit, 1), set: make(map[ids.ID]struct{}, limit)}
}

// Verified reports whether id's signature verified before.
func (c *SignatureCache) Verified(id ids.ID) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.set[id]
	return ok
}

// Add records a verified signature, evicting the oldest entry when full.
func (c *SignatureCache) Add(id ids.ID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.set[id]; ok {
		return
	}
	if len(c.order) < c.limit {
		c.order = append(c.order, id)
	} else {
		delete(c.set, c.order[c.next])
		c.order[c.next] = id
		c.next = (c.next + 1) % c.limit
	}
	c.set[id] = struct{}{}
}
