package writer

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/errcode"
	"github.com/s-chain/schain/reservation"
	"github.com/s-chain/schain/txs"
)

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

// poolRef names the accepted reservation a pool's ids come from.
type poolRef struct {
	txID  ids.ID
	index int
}

// pools are this node's reservation pools (package reservation), one per
// range it serves pooled allocations of: a pooled allocation is answered
// from memory, and the consensus round trip is paid once per reservation
// (poolChunk ids), off the request's path. At most limit pools are kept,
// the least recently used dropped (its ids are skipped, never reissued).
type pools struct {
	chunk uint64
	limit int

	mu    sync.Mutex // guards byKey and lru
	byKey map[string]*list.Element
	lru   *list.List // of *rangePool, most recently used first
}

type rangePool struct {
	key  string
	pool *reservation.Pool[poolRef]
}

func newPools(chunk uint64, limit int) *pools {
	return &pools{chunk: chunk, limit: max(limit, 1), byKey: map[string]*list.Element{}, lru: list.New()}
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
	got, err := w.pools.get(rangeKey, w.newPool).Take(ctx, count, 0)
	if err != nil {
		return Pooled{}, err
	}
	outcome := "hit"
	if got.Waited {
		outcome = "wait"
	}
	w.metrics.pooled.WithLabelValues(outcome).Inc()
	return Pooled{Base: got.Base, Count: got.Count, TxID: got.Ref.txID, Index: got.Ref.index}, nil
}

// PoolHolds reports whether rangeKey's pool holds count ids now, so that
// AllocatePooled would answer from memory (reservation.Pool.Holds).
func (w *Writer) PoolHolds(rangeKey string, count uint64) bool {
	p := w.pools
	p.mu.Lock()
	el, ok := p.byKey[rangeKey]
	p.mu.Unlock()
	return ok && el.Value.(*rangePool).pool.Holds(count)
}

// newPool is rangeKey's pool of poolChunk reservations, refilled in the
// writer's background until it stops.
func (w *Writer) newPool(rangeKey string) *reservation.Pool[poolRef] {
	return reservation.New(w.lifetime, rangeKey, w.reserve(rangeKey), reservation.Config{
		Min: w.pools.chunk, Max: w.pools.chunk, Timeout: w.genesis.MaxWait(),
		Go: func(f func()) {
			w.background.Add(1)
			go func() {
				defer w.background.Done()
				f()
			}()
		},
	})
}

// get returns rangeKey's pool, creating it and dropping the least recently
// used one beyond the limit (but never one with a refill in flight: the
// bound is soft by the refills in flight).
func (p *pools) get(rangeKey string, create func(string) *reservation.Pool[poolRef]) *reservation.Pool[poolRef] {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.byKey[rangeKey]; ok {
		p.lru.MoveToFront(el)
		return el.Value.(*rangePool).pool
	}
	rp := &rangePool{key: rangeKey, pool: create(rangeKey)}
	p.byKey[rangeKey] = p.lru.PushFront(rp)
	for p.lru.Len() > p.limit {
		oldest := p.lru.Back()
		old := oldest.Value.(*rangePool)
		if old.pool.Refilling() {
			break
		}
		p.lru.Remove(oldest)
		delete(p.byKey, old.key)
	}
	return rp.pool
}

// reserve allocates one pool chunk of rangeKey through the ordinary path
// (group commit, consensus) and waits until it is accepted.
func (w *Writer) reserve(rangeKey string) reservation.Reserve[poolRef] {
	return func(ctx context.Context, count, _ uint64) (reservation.Reservation[poolRef], error) {
		sub, err := w.AllocateOne(ctx, txs.AllocateEntry{Range: rangeKey, Count: count})
		if err != nil {
			return reservation.Reservation[poolRef]{}, err
		}
		rc, err := w.WaitReceipt(ctx, sub.TxID)
		if err != nil {
			return reservation.Reservation[poolRef]{}, fmt.Errorf("reservation %s: %w", sub.TxID, err)
		}
		if rc.Status != api.StatusAccepted || sub.Index >= len(rc.Entries) {
			return reservation.Reservation[poolRef]{}, fmt.Errorf("reservation %s is %s: %s", rc.TxID, rc.Status, rc.Error)
		}
		e := rc.Entries[sub.Index]
		return reservation.Reservation[poolRef]{Base: e.Base, Count: e.Count, Ref: poolRef{txID: ids.ID(rc.TxID), index: sub.Index}}, nil
	}
}
