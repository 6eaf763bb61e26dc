package client

import (
	"container/list"
	"sync"

	"github.com/s-chain/schain/api"
)

// ownerKey is one range at one P-chain height: an owner is only valid for
// the height it was computed at, so a new height invalidates every entry at
// once (a membership change at one height is caught by NotOwner hints).
type ownerKey struct {
	rangeKey     string
	pChainHeight uint64
}

type ownerEntry struct {
	key   ownerKey
	owner api.NodeID
}

// ownerCache is a bounded LRU of owners per (range, P-chain height) plus the newest
// P-chain height seen, which is the one lookups use. It is safe for concurrent use.
type ownerCache struct {
	mu           sync.Mutex
	size         int
	pChainHeight uint64                     // guarded by mu; newest P-chain height any node reported
	order        *list.List                 // guarded by mu; front = most recently used
	byKey        map[ownerKey]*list.Element // guarded by mu
	hasAny       bool                       // guarded by mu; pChainHeight is meaningful
}

func newOwnerCache(size int) *ownerCache {
	return &ownerCache{size: size, order: list.New(), byKey: make(map[ownerKey]*list.Element)}
}

// get returns the cached owner of rangeKey at the newest P-chain height seen.
func (c *ownerCache) get(rangeKey string) (api.NodeID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasAny {
		return api.NodeID{}, false
	}
	el, ok := c.byKey[ownerKey{rangeKey, c.pChainHeight}]
	if !ok {
		return api.NodeID{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*ownerEntry).owner, true
}

// put records an owner a node reported. A lagging node's older P-chain height is
// dropped: lookups use the newest P-chain height, so it would only take room.
func (c *ownerCache) put(rangeKey string, pChainHeight uint64, owner api.NodeID) {
	if owner == (api.NodeID{}) || c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hasAny && pChainHeight < c.pChainHeight {
		return
	}
	if !c.hasAny || pChainHeight > c.pChainHeight {
		c.pChainHeight, c.hasAny = pChainHeight, true
	}
	k := ownerKey{rangeKey, pChainHeight}
	if el, ok := c.byKey[k]; ok {
		el.Value.(*ownerEntry).owner = owner
		c.order.MoveToFront(el)
		return
	}
	c.byKey[k] = c.order.PushFront(&ownerEntry{key: k, owner: owner})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.byKey, oldest.Value.(*ownerEntry).key)
	}
}

// forget drops rangeKey's entry at the newest P-chain height, after its owner failed.
func (c *ownerCache) forget(rangeKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ownerKey{rangeKey, c.pChainHeight}
	if el, ok := c.byKey[k]; ok {
		c.order.Remove(el)
		delete(c.byKey, k)
	}
}

func (c *ownerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
