package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/s-chain/schain/api"
)

// AllocateBatch sends several allocate requests in one exchange
// (allocateBatch): each result is the reply or the *api.Error that allocate
// would have answered alone. The error is the exchange's own (transport,
// a refused token, a malformed answer).
func (c *Client) AllocateBatch(ctx context.Context, reqs []api.AllocateArgs) ([]api.AllocateResult, error) {
	wait := false
	for _, a := range reqs {
		wait = wait || a.Wait.Waits()
	}
	var reply api.AllocateBatchReply
	if err := c.call(ctx, "allocateBatch", api.AllocateBatchArgs{Requests: reqs}, &reply, wait); err != nil {
		return nil, err
	}
	if len(reply.Results) != len(reqs) {
		return nil, fmt.Errorf("%w: allocateBatch at %s: %d results for %d requests", ErrMalformedResponse, c.uri, len(reply.Results), len(reqs))
	}
	return reply.Results, nil
}

// batcher coalesces concurrent allocations sent to one node into
// allocateBatch exchanges. At most maxInFlight exchanges run at once; a
// request that arrives while all of them are busy waits for the next one
// and rides with every other request that waited, so a lightly loaded
// client pays nothing (a lone request goes out at once, as a plain
// allocate) and a busy one pays one exchange per batch instead of one per
// request. An exchange answers each request exactly as allocate would.
type batcher struct {
	c           *Client
	maxInFlight int

	mu       sync.Mutex // guards the fields below
	inFlight int
	queue    []*queued
}

type queued struct {
	ctx   context.Context
	args  api.AllocateArgs
	reply chan batchAnswer // buffered: the sender never blocks
}

type batchAnswer struct {
	rep *api.AllocateReply
	err error
}

func newBatcher(c *Client, maxInFlight int) *batcher {
	return &batcher{c: c, maxInFlight: maxInFlight}
}

// allocate queues args and returns its answer. The caller that finds a
// free exchange slot starts a sender, which sends batches until the queue
// is empty; every caller, that one included, waits only for its own
// answer or its context (under steady load the queue may never drain).
func (b *batcher) allocate(ctx context.Context, args api.AllocateArgs) (*api.AllocateReply, error) {
	q := &queued{ctx: ctx, args: args, reply: make(chan batchAnswer, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, q)
	lead := b.inFlight < b.maxInFlight
	if lead {
		b.inFlight++
	}
	b.mu.Unlock()
	if lead {
		go b.send(ctx)
	}
	select {
	case a := <-q.reply:
		return a.rep, a.err
	case <-ctx.Done():
		// Ids a late answer carries are wasted, never issued twice.
		return nil, context.Cause(ctx)
	}
}

// send runs exchanges while requests wait, then frees its slot. The
// exchanges outlive the caller that started it (others ride on them); the
// client's timeout still bounds each.
func (b *batcher) send(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for {
		b.mu.Lock()
		n := min(len(b.queue), api.MaxBatch)
		if n == 0 {
			b.inFlight--
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()
		b.exchange(ctx, batch)
	}
}

func (b *batcher) exchange(ctx context.Context, batch []*queued) {
	live := batch[:0]
	for _, q := range batch {
		if q.ctx.Err() == nil {
			live = append(live, q)
		}
	}
	switch len(live) {
	case 0:
		return
	case 1:
		rep, err := b.c.Allocate(ctx, live[0].args)
		if err != nil {
			rep = nil
		}
		live[0].reply <- batchAnswer{rep, err}
		return
	}
	reqs := make([]api.AllocateArgs, len(live))
	for i, q := range live {
		reqs[i] = q.args
	}
	results, err := b.c.AllocateBatch(ctx, reqs)
	for i, q := range live {
		switch {
		case err != nil:
			q.reply <- batchAnswer{err: err}
		case results[i].Error != nil:
			q.reply <- batchAnswer{err: results[i].Error}
		case results[i].Reply == nil:
			q.reply <- batchAnswer{err: fmt.Errorf("%w: allocateBatch at %s: result %d has neither reply nor error", ErrMalformedResponse, b.c.uri, i)}
		default:
			q.reply <- batchAnswer{rep: results[i].Reply}
		}
	}
}
