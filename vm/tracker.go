package vm

import (
	"sync"

	"github.com/ava-labs/avalanchego/ids"
)

// tracker remembers what happened to transactions this node saw but the
// chain did not accept: rejections with their reason and re-pinned
// replacements. It is bounded (oldest first out) and wakes waiters whenever
// something is decided.
type tracker struct {
	mu       sync.Mutex
	limit    int
	rejected map[ids.ID]string
	replaced map[ids.ID]ids.ID
	order    []ids.ID
	changed  chan struct{} // closed and replaced on every decision
}

func newTracker(limit int) *tracker {
	return &tracker{limit: max(limit, 1), rejected: map[ids.ID]string{}, replaced: map[ids.ID]ids.ID{}, changed: make(chan struct{})}
}

func (t *tracker) reject(id ids.ID, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remember(id)
	t.rejected[id] = reason
	t.wakeLocked()
}

func (t *tracker) replace(old, replacement ids.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.remember(old)
	t.replaced[old] = replacement
	t.wakeLocked()
}

func (t *tracker) lookup(id ids.ID) (reason string, rejected bool, replacement ids.ID, replaced bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reason, rejected = t.rejected[id]
	replacement, replaced = t.replaced[id]
	return
}

// wait returns a channel closed at the next decision (accept, reject or
// replacement).
func (t *tracker) wait() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

func (t *tracker) wake() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wakeLocked()
}

func (t *tracker) wakeLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tracker) remember(id ids.ID) {
	if _, ok := t.rejected[id]; ok {
		return
	}
	if _, ok := t.replaced[id]; ok {
		return
	}
	t.order = append(t.order, id)
	if len(t.order) > t.limit {
		old := t.order[0]
		t.order = t.order[1:]
		delete(t.rejected, old)
		delete(t.replaced, old)
	}
}
