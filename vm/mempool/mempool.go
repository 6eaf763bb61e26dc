// Package mempool holds signed transactions waiting for a block: bounded by
// count and bytes, deduplicated by tx ID, first in first out, except
// heartbeats, which go first, outside the bounds, at most
// HeartbeatsPerValidator per validator and one per validator and liveness
// round.
package mempool

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/txs"
)

var (
	// ErrFull is backpressure: the caller should retry later. Nothing
	// already pending is dropped to make room.
	ErrFull = errcode.New(errcode.MempoolFull, "mempool_full", "mempool: full")
	// ErrDuplicate means the transaction is already pending.
	ErrDuplicate = errcode.New(errcode.Rejected, "duplicate", "mempool: transaction already pending")
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
	// bytes and count cover client work only; heartbeats are bounded per
	// validator instead.
	bytes, count int
	beats        map[ids.NodeID][]*list.Element // pending heartbeats by signer

	pending chan struct{} // holds a token while the pool is non-empty
}

// New returns an empty pool.
func New(cfg Config) *Mempool {
	return &Mempool{cfg: cfg, byID: map[ids.ID]*list.Element{}, order: list.New(), beats: map[ids.NodeID][]*list.Element{}, pending: make(chan struct{}, 1)}
}

// HeartbeatsPerValidator is how many heartbeats of one validator the pool
// holds: the previous, current and next liveness round, which is all that
// admission lets in. Heartbeats are outside the pool's bounds: a validator
// whose heartbeat waits behind a backlog, or is refused by a full pool,
// drops out of the members and its ranges move, and a loaded node must
// never lose its ranges because it is loaded. Only validators can sign
// heartbeats, so the pool holds at most this many per validator, and one
// validator's heartbeats never take another's room.
const HeartbeatsPerValidator = 3

// Add queues tx, or says why not. Heartbeats go to the front of the line,
// one per validator and liveness round; a validator's fourth evicts its
// oldest.
func (m *Mempool) Add(tx *txs.Tx) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[tx.ID()]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, tx.ID())
	}
	if tx.IsHeartbeat() {
		return m.addHeartbeat(tx)
	}
	size := len(tx.Bytes())
	if m.count >= m.cfg.MaxTxs || m.bytes+size > m.cfg.MaxBytes {
		return fmt.Errorf("%w: %d txs, %d bytes pending (limits %d, %d)", ErrFull, m.count, m.bytes, m.cfg.MaxTxs, m.cfg.MaxBytes)
	}
	m.byID[tx.ID()] = m.order.PushBack(tx)
	m.bytes += size
	m.count++
	m.signal()
	return nil
}

func (m *Mempool) addHeartbeat(tx *txs.Tx) error {
	h := tx.Unsigned.Head()
	beats := m.beats[h.Owner]
	for _, e := range beats {
		if e.Value.(*txs.Tx).Unsigned.Head().Round == h.Round {
			return fmt.Errorf("%w: a heartbeat of %s for liveness round %d", ErrDuplicate, h.Owner, h.Round)
		}
	}
	if len(beats) == HeartbeatsPerValidator {
		oldest := 0
		for i, e := range beats {
			if e.Value.(*txs.Tx).Unsigned.Head().Round < beats[oldest].Value.(*txs.Tx).Unsigned.Head().Round {
				oldest = i
			}
		}
		m.removeLocked(beats[oldest].Value.(*txs.Tx).ID())
	}
	e := m.order.PushFront(tx)
	m.byID[tx.ID()] = e
	m.beats[h.Owner] = append(m.beats[h.Owner], e)
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
		m.removeLocked(id)
	}
	if m.order.Len() == 0 {
		select {
		case <-m.pending:
		default:
		}
	}
}

func (m *Mempool) removeLocked(id ids.ID) {
	e, ok := m.byID[id]
	if !ok {
		return
	}
	tx := e.Value.(*txs.Tx)
	m.order.Remove(e)
	delete(m.byID, id)
	if !tx.IsHeartbeat() {
		m.bytes -= len(tx.Bytes())
		m.count--
		return
	}
	owner := tx.Unsigned.Head().Owner
	beats := m.beats[owner]
	for i, b := range beats {
		if b == e {
			beats = append(beats[:i:i], beats[i+1:]...)
			break
		}
	}
	if len(beats) == 0 {
		delete(m.beats, owner)
	} else {
		m.beats[owner] = beats
	}
}

// All returns every pending transaction in pool order (heartbeats first,
// then oldest first), without removing them.
func (m *Mempool) All() []*txs.Tx {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*txs.Tx, 0, m.order.Len())
	for e := m.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*txs.Tx))
	}
	return out
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

// Bytes is the size of all pending client transactions (heartbeats are
// bounded per validator instead).
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
