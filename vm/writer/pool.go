package writer

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/s-chain/schain/errcode"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
)

// ErrPoolRefill means the reservation that would refill a range's pool was
// not accepted; the request may be retried (or sent without pooling).
var ErrPoolRefill = errcode.New(errcode.NotReady, "pool_refill", "writer: refilling the id pool failed")

// ErrInvalidPooled marks a pooled request the API answers as an invalid
// parameter (a count the pool does not serve).
var ErrInvalidPooled = errcode.New(errcode.InvalidParams, "invalid_pooled", "writer: invalid pooled allocation")

// Pooled is the answer to a pooled allocation: count ids from base, cut
// from the accepted reservation TxID (entry Index).
type Pooled struct {
	Base, Count uint64
	TxID        ids.ID
	Index       int
}

// segment is the unissued rest of one accepted reservation.
type segment struct {
	next, end uint64
	txID      ids.ID
	index     int
}

// rangePool is one range's committed, not yet handed out ids.
type rangePool struct {
	key  string
	segs []segment
	// refill is non-nil while a reservation is in flight; it is closed when
	// that reservation is decided, and err then says how it ended.
	refill chan struct{}
	err    error
	elem   *list.Element
}

func (p *rangePool) available() uint64 {
	var n uint64
	for _, s := range p.segs {
		n += s.end - s.next
	}
	return n
}

// pools hands out ids from reservations this node committed in advance for
// the ranges it owns: a pooled allocation is answered from memory, and the
// consensus round trip is paid once per reservation (poolChunk ids), off the
// request's path. It is safe because a reservation is accepted state before
// any of its ids is handed out: nobody else can ever issue them, whoever
// owns the range later. Ids of a pool lost with the process (crash,
// restart, eviction) are skipped, never reissued.
type pools struct {
	chunk uint64
	limit int

	mu    sync.Mutex
	byKey map[string]*rangePool
	lru   *list.List // of *rangePool, most recently used first
}

func newPools(chunk uint64, limit int) *pools {
	return &pools{chunk: chunk, limit: max(limit, 1), byKey: map[string]*rangePool{}, lru: list.New()}
}

// AllocatePooled hands out count ids of rangeKey from this node's pool,
// after checking this node owns the range now. An empty pool is refilled by
// one reservation of poolChunk ids (the caller waits for its acceptance);
// a pool running low is refilled in the background, so a steady stream of
// requests never waits for consensus. Requests for more than a quarter of a
// chunk are refused with an invalid-parameter hint: they gain nothing from
// a pool.
func (w *Writer) AllocatePooled(ctx context.Context, rangeKey string, count uint64) (Pooled, error) {
	if count == 0 || count > w.pools.chunk/4 {
		return Pooled{}, fmt.Errorf("%w: a pooled allocation takes 1..%d ids (a quarter of the pool chunk); allocate larger counts without pooling", ErrInvalidPooled, w.pools.chunk/4)
	}
	if err := w.checkOwned(ctx, []string{rangeKey}); err != nil {
		return Pooled{}, err
	}
	p := w.pools
	waited := false
	for {
		p.mu.Lock()
		rp := p.get(rangeKey)
		if out, ok := rp.take(count); ok {
			outcome := "hit"
			if waited {
				outcome = "wait"
			}
			w.metrics.pooled.WithLabelValues(outcome).Inc()
			if rp.available() < p.chunk/2 && rp.refill == nil {
				w.startRefill(rp)
			}
			p.mu.Unlock()
			return out, nil
		}
		if rp.refill == nil {
			w.startRefill(rp)
		}
		wait := rp.refill
		p.mu.Unlock()
		waited = true
		select {
		case <-wait:
		case <-ctx.Done():
			return Pooled{}, ctx.Err()
		}
		p.mu.Lock()
		err, avail := rp.err, rp.available()
		p.mu.Unlock()
		if err != nil && avail < count {
			return Pooled{}, err
		}
	}
}

// PoolHolds reports whether rangeKey's pool holds count ids now, so that
// AllocatePooled would answer from memory: a hint (another caller may take
// them first) for a caller that serves several requests in turn and must
// not make the others wait on one range's reservation.
func (w *Writer) PoolHolds(rangeKey string, count uint64) bool {
	p := w.pools
	p.mu.Lock()
	defer p.mu.Unlock()
	rp, ok := p.byKey[rangeKey]
	return ok && rp.available() >= count
}

// get returns rangeKey's pool, creating it and evicting the least recently
// used one beyond the limit (its ids are skipped). Called with p.mu held.
func (p *pools) get(rangeKey string) *rangePool {
	if rp, ok := p.byKey[rangeKey]; ok {
		p.lru.MoveToFront(rp.elem)
		return rp
	}
	rp := &rangePool{key: rangeKey}
	rp.elem = p.lru.PushFront(rp)
	p.byKey[rangeKey] = rp
	for p.lru.Len() > p.limit {
		old := p.lru.Back().Value.(*rangePool)
		if old.refill != nil {
			break // keep pools with a reservation in flight; the bound is soft by the refills in flight
		}
		p.lru.Remove(old.elem)
		delete(p.byKey, old.key)
	}
	return rp
}

// take cuts count ids from the first segment that holds them; segments too
// short for the request before it are skipped (their ids are never handed
// out). Called with the pools' lock held.
func (rp *rangePool) take(count uint64) (Pooled, bool) {
	for len(rp.segs) > 0 {
		s := &rp.segs[0]
		if s.end-s.next >= count {
			out := Pooled{Base: s.next, Count: count, TxID: s.txID, Index: s.index}
			s.next += count
			if s.next == s.end {
				rp.segs = rp.segs[1:]
			}
			return out, true
		}
		rp.segs = rp.segs[1:]
	}
	return Pooled{}, false
}

// startRefill commits one reservation for rp in the background. Called with
// the pools' lock held.
func (w *Writer) startRefill(rp *rangePool) {
	done := make(chan struct{})
	rp.refill, rp.err = done, nil
	w.background.Add(1)
	go func() {
		defer w.background.Done()
		seg, err := w.reserve(rp.key)
		w.pools.mu.Lock()
		if err == nil {
			rp.segs = append(rp.segs, seg)
		}
		rp.refill, rp.err = nil, err
		w.pools.mu.Unlock()
		close(done)
	}()
}

// reserve allocates one pool chunk of rangeKey through the ordinary path
// (group commit, consensus) and waits until it is accepted.
func (w *Writer) reserve(rangeKey string) (segment, error) {
	ctx, cancel := context.WithTimeout(w.lifetime, w.genesis.MaxWait())
	defer cancel()
	sub, err := w.AllocateOne(ctx, txs.AllocateEntry{Range: rangeKey, Count: w.pools.chunk})
	if err != nil {
		return segment{}, fmt.Errorf("%w: %w", ErrPoolRefill, err)
	}
	rc, err := w.WaitReceipt(ctx, sub.TxID)
	if err != nil {
		return segment{}, fmt.Errorf("%w: reservation %s: %w", ErrPoolRefill, sub.TxID, err)
	}
	if rc.Status != api.StatusAccepted || sub.Index >= len(rc.Entries) {
		return segment{}, fmt.Errorf("%w: reservation %s is %s: %s", ErrPoolRefill, rc.TxID, rc.Status, rc.Error)
	}
	e := rc.Entries[sub.Index]
	return segment{next: e.Base, end: e.Base + e.Count, txID: ids.ID(rc.TxID), index: sub.Index}, nil
}
