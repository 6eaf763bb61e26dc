package client

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/errcode"
)

// Fresh reads are for decisions that must never go back in time: the
// bounds of a rollback, a cutover's floors, removing a validator. Any one
// node may lag behind the chain (paused, partitioned from consensus,
// restarted from an old copy of its database) while its API answers, and
// a node cannot always know it lags. So a fresh read asks every endpoint,
// takes the newest answer (by the node's last accepted block, api.Head) or
// the largest counter, and refuses unless the nodes that answered hold
// more than 2/3 of the stake: then they include a validator that signed
// every final block, and at most a third of the stake can lag unseen.
// Nodes that say they lag (NotReady: bootstrapping, behind_peers) and
// nodes too old to say how new their state is do not count.
//
// The endpoints given to the Router must hold more than 2/3 of the stake.

// ErrNoQuorum: the nodes that answered a fresh read hold at most 2/3 of
// the stake. Retry later, or give the Router more nodes.
var ErrNoQuorum = errcode.New(errcode.NotReady, "no_quorum", "client: the nodes that answered hold at most 2/3 of the stake")

const (
	// freshGrace is how long a fresh read waits for the remaining
	// endpoints once the answers hold a quorum: a paused node must not
	// hold every read for a whole request timeout.
	freshGrace = 250 * time.Millisecond
	// stakeTTL is how long the validators' weights are reused: they
	// change only with the P-chain's set, by an operator's transaction.
	stakeTTL = 30 * time.Second
)

// Fresh is a Router whose reads are fresh reads; its writes are the
// Router's. It satisfies the same read interfaces (cutover.Chain,
// eviction.Memberships), so a tool chooses fresh reads by passing it.
type Fresh struct{ *Router }

// Fresh returns the fresh-read view of r.
func (r *Router) Fresh() Fresh { return Fresh{r} }

// GetAllocation is the largest next id of the range among nodes holding
// more than 2/3 of the stake: counters only go up, so it is at least what
// every one of them had accepted.
func (f Fresh) GetAllocation(ctx context.Context, rangeKey string) (*api.AllocationReply, error) {
	return f.GetAllocationAt(ctx, rangeKey, 0)
}

// GetAllocationAt is GetAllocation from nodes that accepted minHeight
// (Newest's height, say): nodes holding more than 2/3 of the stake must
// have.
func (f Fresh) GetAllocationAt(ctx context.Context, rangeKey string, minHeight uint64) (*api.AllocationReply, error) {
	return quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.AllocationReply, error) {
		return e.c.GetAllocationAt(ctx, rangeKey, minHeight)
	}, func(a, b *api.AllocationReply) bool {
		return a.Next > b.Next || (a.Next == b.Next && a.Head.Newer(b.Head))
	}, func(a *api.AllocationReply) api.Head { return a.Head })
}

// GetMembership is the newest membership view among nodes holding more
// than 2/3 of the stake.
func (f Fresh) GetMembership(ctx context.Context) (*api.MembershipReply, error) {
	return quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.MembershipReply, error) {
		m, err := e.c.GetMembership(ctx)
		if err == nil {
			f.stakes.learn(m)
		}
		return m, err
	}, newestOf[*api.MembershipReply], func(a *api.MembershipReply) api.Head { return a.Head })
}

// GetReceipt is the receipt from the newest node among nodes holding more
// than 2/3 of the stake.
func (f Fresh) GetReceipt(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	return quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.ReceiptReply, error) {
		return e.c.GetReceipt(ctx, txID)
	}, newestOf[*api.ReceiptReply], func(a *api.ReceiptReply) api.Head { return a.Head })
}

// Newest is the newest last accepted block among nodes holding more than
// 2/3 of the stake that say they are current: a read asking for at least
// its height (api.AtLeast) from any node answers state no older.
func (f Fresh) Newest(ctx context.Context) (api.Head, error) {
	n, err := quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.NodeReply, error) {
		n, err := f.learn(ctx, e)
		if err == nil && n.NotReady != "" {
			return nil, fmt.Errorf("%w: %s at %s", ErrNotReady, n.NotReady, e.c.URI())
		}
		return n, err
	}, newestOf[*api.NodeReply], func(a *api.NodeReply) api.Head { return a.Head })
	if err != nil {
		return api.Head{}, err
	}
	return n.Head, nil
}

// headed is a reply that names the node's last accepted block.
type headed interface {
	*api.MembershipReply | *api.ReceiptReply | *api.NodeReply
}

func newestOf[T headed](a, b T) bool {
	return headOf(a).Newer(headOf(b))
}

func headOf[T headed](v T) api.Head {
	switch r := any(v).(type) {
	case *api.MembershipReply:
		return r.Head
	case *api.ReceiptReply:
		return r.Head
	case *api.NodeReply:
		return r.Head
	}
	return api.Head{}
}

// answer is one endpoint's part of a fresh read.
type answer[T any] struct {
	e   *endpoint
	v   T
	err error
}

// quorumRead asks every endpoint that is not sidelined, keeps the best
// answer (better) among those with a head, and returns it once the nodes
// that gave one hold more than 2/3 of the stake, waiting freshGrace more
// for the rest. A refusal every node would answer the same way (invalid
// parameters, not found) is returned as it is; lagging nodes and
// unreachable ones are retried with the Router's back-off until the
// quorum answers or the attempts run out (ErrNoQuorum).
func quorumRead[T any](ctx context.Context, r *Router, op func(context.Context, *endpoint) (T, error), better func(a, b T) bool, head func(T) api.Head) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		v, err := quorumOnce(ctx, r, op, better, head)
		if err == nil || !retryable(err) {
			return v, err
		}
		if attempt >= r.cfg.Retry.MaxAttempts {
			return zero, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		if serr := sleep(ctx, r.cfg.Retry.backoff(attempt, err), err); serr != nil {
			return zero, serr
		}
	}
}

func quorumOnce[T any](ctx context.Context, r *Router, op func(context.Context, *endpoint) (T, error), better func(a, b T) bool, head func(T) api.Head) (T, error) {
	var zero T
	st, err := r.stakes.get(ctx, r)
	if err != nil {
		return zero, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer[T], len(r.nodes))
	asked := 0
	now := time.Now()
	for _, e := range r.nodes {
		if e.down(now) {
			continue
		}
		asked++
		go func() {
			if _, known := e.nodeID(); !known {
				if _, err := r.learn(ctx, e); err != nil {
					answers <- answer[T]{e: e, err: err}
					return
				}
			}
			v, err := op(ctx, e)
			r.observe(e, err)
			answers <- answer[T]{e: e, v: v, err: err}
		}()
	}
	var (
		best    T
		have    bool
		counted = map[api.NodeID]bool{}
		weight  uint64
		grace   <-chan time.Time
		failed  []string
	)
	for got := 0; got < asked; got++ {
		var a answer[T]
		select {
		case a = <-answers:
		case <-grace:
			return best, nil
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		switch {
		case a.err != nil && !retryable(a.err) && !errors.Is(a.err, ErrWrongChain):
			return zero, a.err
		case a.err != nil:
			failed = append(failed, a.err.Error())
			continue
		case head(a.v).AcceptedHeight == 0:
			failed = append(failed, fmt.Sprintf("%s names no last accepted block (a node older than fresh reads)", a.e.c.URI()))
			continue
		}
		if !have || better(a.v, best) {
			best, have = a.v, true
		}
		if id, ok := a.e.nodeID(); ok && !counted[id] {
			counted[id] = true
			weight += st.weights[id]
		}
		if grace == nil && supermajority(weight, st.total) {
			t := time.NewTimer(freshGrace)
			defer t.Stop()
			grace = t.C
		}
	}
	if have && supermajority(weight, st.total) {
		return best, nil
	}
	return zero, fmt.Errorf("%w: %d of %d answered by %d of %d endpoints (%s)", ErrNoQuorum, weight, st.total, len(counted), len(r.nodes), strings.Join(failed, "; "))
}

// supermajority is part*3 > total*2, without overflow.
func supermajority(part, total uint64) bool {
	ph, pl := bits.Mul64(part, 3)
	th, tl := bits.Mul64(total, 2)
	return ph > th || (ph == th && pl > tl)
}

// stake is the validators' weights, as the newest membership view read
// says (its validators: the P-chain set of its P-chain height).
type stake struct {
	weights map[api.NodeID]uint64
	total   uint64
	head    api.Head
	at      time.Time
}

// stakes caches the weights fresh reads count. It is safe for concurrent
// use.
type stakes struct {
	mu  sync.Mutex // guards cur
	cur *stake
}

// learn keeps the weights of m if its view is newer than the cached one.
func (s *stakes) learn(m *api.MembershipReply) {
	if len(m.Validators) == 0 {
		return
	}
	n := &stake{weights: make(map[api.NodeID]uint64, len(m.Validators)), head: m.Head, at: time.Now()}
	for _, v := range m.Validators {
		n.weights[v.NodeID] = v.Weight
		n.total += v.Weight // no overflow: the P-chain's total fits
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || !s.cur.head.Newer(m.Head) {
		s.cur = n
	}
}

// get returns the cached weights, read again when older than stakeTTL
// from every endpoint that answers: the newest view among those that
// answer within freshGrace of the first.
func (s *stakes) get(ctx context.Context, r *Router) (*stake, error) {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur != nil && time.Since(cur.at) < stakeTTL {
		return cur, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, len(r.nodes))
	for _, e := range r.nodes {
		go func() {
			m, err := e.c.GetMembership(ctx)
			r.observe(e, err)
			if err == nil {
				s.learn(m)
			}
			done <- err
		}()
	}
	var (
		errs  []error
		grace <-chan time.Time
	)
wait:
	for range r.nodes {
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if grace == nil {
				t := time.NewTimer(freshGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			break wait
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.cur == nil:
		return nil, fmt.Errorf("reading the validators' stake: %w", errors.Join(errs...))
	case time.Since(s.cur.at) >= stakeTTL:
		// Nothing newer answered: the same weights, good for another while.
		renewed := *s.cur
		renewed.at = time.Now()
		s.cur = &renewed
	}
	return s.cur, nil
}
