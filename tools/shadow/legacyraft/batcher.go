package legacyraft

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// maxInFlight bounds the raft entries a group has proposed but not yet seen
// applied, so a slow group cannot accumulate unbounded futures.
const maxInFlight = 8

// pending is one caller waiting for its allocation.
type pending struct {
	rec  allocRecord
	done chan allocDone // buffered(1): the batcher never blocks on a caller
}

type allocDone struct {
	first, term uint64
	err         error
}

type inflight struct {
	future raft.ApplyFuture
	batch  []*pending
}

// batcher turns concurrent allocations of one group into raft log entries of
// up to maxRecords records, waiting at most maxWait for a batch to fill. One
// entry is one LogStore write and one FSM apply under one lock, which is what
// amortises the per-entry raft and storage cost.
type batcher struct {
	raft         *raft.Raft
	maxRecords   int
	maxWait      time.Duration
	applyTimeout time.Duration
	classify     func(error) error // maps raft errors to legacy classes
	queue        chan *pending
	inflight     chan inflight
	done         chan struct{}
	wg           sync.WaitGroup
}

func newBatcher(r *raft.Raft, cfg Config, maxRecords int, classify func(error) error) *batcher {
	b := &batcher{
		raft:         r,
		classify:     classify,
		maxRecords:   maxRecords,
		maxWait:      cfg.BatchMaxWait,
		applyTimeout: cfg.ApplyTimeout,
		queue:        make(chan *pending, cfg.QueueDepth),
		inflight:     make(chan inflight, maxInFlight),
		done:         make(chan struct{}),
	}
	b.wg.Add(2)
	go b.collect()
	go b.complete()
	return b
}

// submit queues one allocation and waits for its outcome or ctx.
func (b *batcher) submit(ctx context.Context, rec allocRecord) (allocDone, error) {
	p := &pending{rec: rec, done: make(chan allocDone, 1)}
	select {
	case b.queue <- p:
	case <-b.done:
		return allocDone{}, ErrClosed
	default:
		return allocDone{}, ErrSaturated
	}
	select {
	case d := <-p.done:
		return d, d.err
	case <-b.done:
		return allocDone{}, ErrClosed
	case <-ctx.Done():
		return allocDone{}, ctx.Err()
	}
}

func (b *batcher) collect() {
	defer b.wg.Done()
	defer close(b.inflight)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var batch []*pending
		select {
		case <-b.done:
			b.drain()
			return
		case p := <-b.queue:
			batch = append(batch, p)
		}
		timer.Reset(b.maxWait)
	fill:
		for len(batch) < b.maxRecords {
			select {
			case p := <-b.queue:
				batch = append(batch, p)
			case <-timer.C:
				break fill
			}
		}
		timer.Stop()
		b.propose(batch)
	}
}

func (b *batcher) propose(batch []*pending) {
	records := make([]allocRecord, len(batch))
	for i, p := range batch {
		records[i] = p.rec
	}
	f := b.raft.Apply(encodeAllocBatch(records), b.applyTimeout)
	select {
	case b.inflight <- inflight{future: f, batch: batch}:
	case <-b.done:
		fail(batch, ErrClosed)
	}
}

// complete waits for proposed entries in order and answers their callers.
func (b *batcher) complete() {
	defer b.wg.Done()
	for in := range b.inflight {
		if err := in.future.Error(); err != nil {
			fail(in.batch, b.classify(err))
			continue
		}
		switch resp := in.future.Response().(type) {
		case *batchResponse:
			for i, p := range in.batch {
				o := resp.outcomes[i]
				p.done <- allocDone{first: o.first, term: resp.term, err: o.err}
			}
		case error:
			fail(in.batch, resp)
		default:
			fail(in.batch, fmt.Errorf("%w: unexpected apply response %T", ErrClosed, resp))
		}
	}
}

func (b *batcher) drain() {
	for {
		select {
		case p := <-b.queue:
			p.done <- allocDone{err: ErrClosed}
		default:
			return
		}
	}
}

func (b *batcher) stop() {
	close(b.done)
	b.wg.Wait()
	b.drain()
}

func fail(batch []*pending, err error) {
	for _, p := range batch {
		p.done <- allocDone{err: err}
	}
}
