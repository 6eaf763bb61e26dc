// Package mempool holds signed transactions waiting for a block: bounded by
// count and bytes, deduplicated by tx ID, first in first out, except
// heartbeats, which go first.
package mempool

import (
	"container/list"
	"errors"
	"fmt"
	"sync"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
)

var (
	// ErrFull is backpressure: the caller should retry later. Nothing
	// already pending is dropped to make room.
	ErrFull = errors.New("mempool: full")
	// ErrDuplicate means the transaction is already pending.
	ErrDuplicate = errors.New("mempool: transaction already pending")
)

// Config bounds the pool.
type Config struct {
	MaxTxs   int `json:"maxTxs"`
	MaxBytes int `json:"maxBytes"`
}

// DefaultConfig keeps a few seconds of traffic at thousands of tx/s.
func DefaultConfig() Config { return Config{MaxTxs: 8192, MaxBytes: 64 << 20} }

// Mempool is safe for concurrent use.
type Mempool struct {
	cfg Config

	mu    sync.Mutex
	byID  map[ids.ID]*list.Element
	order *list.List // of *txs.Tx, oldest first
	bytes int

	pending chan struct{} // holds a token while the pool is non-empty
}

// New returns an empty pool.
func New(cfg Config) *Mempool {
	return &Mempool{cfg: cfg, byID: map[ids.ID]*list.Element{}, order: list.New(), pending: make(chan struct{}, 1)}
}

// HeartbeatReserve is how many heartbeats a full pool still takes, beyond
// its limits. A validator whose heartbeat waits behind a backlog, or is
// refused by a full pool, drops out of the members and its ranges move: a
// loaded node must never lose its ranges because it is loaded. Heartbeats
// are small and a pool holds at most a few per validator (one per liveness
// epoch; stale ones are evicted), so the reserve stays small.
const HeartbeatReserve = 256

// Add queues tx, or says why not. Heartbeats go to the front of the line
// and may use HeartbeatReserve slots above the limits.
func (m *Mempool) Add(tx *txs.Tx) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[tx.ID()]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, tx.ID())
	}
	size := len(tx.Bytes())
	heartbeat := tx.IsHeartbeat()
	maxTxs, maxBytes := m.cfg.MaxTxs, m.cfg.MaxBytes
	if heartbeat {
		maxTxs, maxBytes = maxTxs+HeartbeatReserve, maxBytes+HeartbeatReserve*size
	}
	if m.order.Len() >= maxTxs || m.bytes+size > maxBytes {
		return fmt.Errorf("%w: %d txs, %d bytes pending (limits %d, %d)", ErrFull, m.order.Len(), m.bytes, m.cfg.MaxTxs, m.cfg.MaxBytes)
	}
	if heartbeat {
		m.byID[tx.ID()] = m.order.PushFront(tx)
	} else {
		m.byID[tx.ID()] = m.order.PushBack(tx)
	}
	m.bytes += size
	m.signal()
	return nil
}

// Has reports whether id is pending.
func (m *Mempool) Has(id ids.ID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.byID[id]
	return ok
}

// Get returns a pending transaction.
func (m *Mempool) Get(id ids.ID) (*txs.Tx, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byID[id]
	if !ok {
		return nil, false
	}
	return e.Value.(*txs.Tx), true
}

// Remove drops transactions (included in an accepted block, or found
// invalid). Unknown IDs are ignored.
func (m *Mempool) Remove(txIDs ...ids.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range txIDs {
		e, ok := m.byID[id]
		if !ok {
			continue
		}
		m.bytes -= len(e.Value.(*txs.Tx).Bytes())
		m.order.Remove(e)
		delete(m.byID, id)
	}
	if m.order.Len() == 0 {
		select {
		case <-m.pending:
		default:
		}
	}
}

// Peek returns up to maxTxs oldest transactions whose bytes add up to at
// most maxBytes, without removing them.
func (m *Mempool) Peek(maxTxs, maxBytes int) []*txs.Tx {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*txs.Tx
	size := 0
	for e := m.order.Front(); e != nil && len(out) < maxTxs; e = e.Next() {
		tx := e.Value.(*txs.Tx)
		if size+len(tx.Bytes()) > maxBytes {
			break
		}
		size += len(tx.Bytes())
		out = append(out, tx)
	}
	return out
}

// Len is the number of pending transactions.
func (m *Mempool) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.order.Len()
}

// Bytes is the size of all pending transactions.
func (m *Mempool) Bytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

// Pending is readable while the pool may hold transactions; a reader that
// takes the token must call Signal if it leaves transactions behind. It is
// how WaitForEvent learns of work without polling.
func (m *Mempool) Pending() <-chan struct{} { return m.pending }

// Signal re-arms Pending if transactions remain.
func (m *Mempool) Signal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.order.Len() > 0 {
		m.signal()
	}
}

func (m *Mempool) signal() {
	select {
	case m.pending <- struct{}{}:
	default:
	}
}
