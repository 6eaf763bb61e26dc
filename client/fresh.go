package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/errcode"
)

// Fresh reads are for decisions that must never go back in time: the
// bounds of a rollback, a cutover's floors, removing a validator. Any one
// node may lag behind the chain (paused, partitioned from consensus,
// restarted from an old copy of its database) while its API answers, a
// node cannot always know it lags, and a hostile node may answer anything.
// So a fresh read asks every endpoint and needs two things:
//
//   - a quorum: the nodes that answered hold more than 2/3 of the stake, so
//     they include a validator that signed every final block (at most a
//     third of the stake lags unseen);
//   - a voucher: what it returns, nodes holding more than 1/3 of the stake
//     vouch for, so at least one of them is honest. A counter or a height
//     is vouched for by every node that answered at least as much (counters
//     and heights only go up); a membership view or a receipt only by nodes
//     that answered the same.
//
// Weights come from the caller's own view of the P-chain
// (RouterConfig.Stake), never from the answers being counted; without one,
// from the validator set that more than 2/3 of the endpoints report alike.
// An identity claimed by two endpoints counts for neither. Nodes that say
// they lag (NotReady: bootstrapping, behind_peers) and nodes too old to say
// how new their state is do not count.
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

// GetAllocation is the largest next id of the range that nodes holding
// more than 1/3 of the stake vouch for (each answered at least as much),
// among answers of nodes holding more than 2/3: counters only go up, so it
// is at least what some honest node had accepted and at most what one has.
func (f Fresh) GetAllocation(ctx context.Context, rangeKey string) (*api.AllocationReply, error) {
	return f.GetAllocationAt(ctx, rangeKey, 0)
}

// GetAllocationAt is GetAllocation from nodes that accepted minHeight
// (Newest's height, say): nodes holding more than 2/3 of the stake must
// have.
func (f Fresh) GetAllocationAt(ctx context.Context, rangeKey string, minHeight uint64) (*api.AllocationReply, error) {
	return quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.AllocationReply, error) {
		return e.c.GetAllocationAt(ctx, rangeKey, minHeight)
	}, byRank(func(a *api.AllocationReply) uint64 { return a.Next }), func(a *api.AllocationReply) api.Head { return a.Head })
}

// GetMembership is the newest membership view that nodes holding more than
// 1/3 of the stake answered alike (heads and node IDs aside).
func (f Fresh) GetMembership(ctx context.Context) (*api.MembershipReply, error) {
	return quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.MembershipReply, error) {
		return e.c.GetMembership(ctx)
	}, bySameContent(func(m *api.MembershipReply) any {
		c := *m
		c.Head, c.NodeID = api.Head{}, api.NodeID{}
		return c
	}, newestOf[*api.MembershipReply]), func(a *api.MembershipReply) api.Head { return a.Head })
}

// GetReceipt is the newest receipt that nodes holding more than 1/3 of the
// stake answered alike (heads aside): a receipt one node alone calls
// accepted reads as the others' pending until more accept it.
func (f Fresh) GetReceipt(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	return quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.ReceiptReply, error) {
		return e.c.GetReceipt(ctx, txID)
	}, bySameContent(func(rc *api.ReceiptReply) any {
		c := *rc
		c.Head = api.Head{}
		return c
	}, newestOf[*api.ReceiptReply]), func(a *api.ReceiptReply) api.Head { return a.Head })
}

// Newest is the newest last accepted height that nodes holding more than
// 1/3 of the stake reached, among nodes holding more than 2/3 that say they
// are current: a read asking for at least its height (api.AtLeast) from any
// node answers state no older, and one hostile node cannot push it past
// what the honest ones accepted.
func (f Fresh) Newest(ctx context.Context) (api.Head, error) {
	n, err := quorumRead(ctx, f.Router, func(ctx context.Context, e *endpoint) (*api.NodeReply, error) {
		n, err := f.learn(ctx, e)
		if err == nil && n.NotReady != "" {
			return nil, fmt.Errorf("%w: %s at %s", ErrNotReady, n.NotReady, e.c.URI())
		}
		return n, err
	}, byRank(func(a *api.NodeReply) uint64 { return a.Head.AcceptedHeight }), func(a *api.NodeReply) api.Head { return a.Head })
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

// vote is an answer that counts, with its node's weight.
type vote[T any] struct {
	v      T
	weight uint64
}

// vouch picks, from answers that count, one that nodes holding more than
// a third of total vouch for (ok false if none is), and says whether it is
// settled: no answer that counts is newer than it. An unsettled pick means
// some node answered more than the others vouch for yet: a block one
// honest node accepted and the others are about to, or a lie.
type vouch[T any] func(answers []vote[T], total uint64) (v T, ok, settled bool)

// byRank vouches for the answer of the largest rank that answers holding
// more than a third of the stake reach or pass: the rank of a counter or
// a height, which only go up, so a node that answered more vouches for
// every smaller value.
func byRank[T any](rank func(T) uint64) vouch[T] {
	return func(answers []vote[T], total uint64) (T, bool, bool) {
		sorted := slices.Clone(answers)
		slices.SortStableFunc(sorted, func(a, b vote[T]) int { return cmp.Compare(rank(b.v), rank(a.v)) })
		var weight uint64
		for _, a := range sorted {
			weight += a.weight
			if moreThanThird(weight, total) {
				return a.v, true, rank(a.v) == rank(sorted[0].v)
			}
		}
		var zero T
		return zero, false, false
	}
}

// bySameContent vouches for the newest answer whose content (key's value,
// compared as JSON) nodes holding more than a third of the stake answered.
func bySameContent[T any](key func(T) any, newer func(a, b T) bool) vouch[T] {
	return func(answers []vote[T], total uint64) (T, bool, bool) {
		type group struct {
			weight uint64
			newest T
		}
		groups := map[string]*group{}
		for _, a := range answers {
			k, err := json.Marshal(key(a.v))
			if err != nil {
				continue
			}
			g := groups[string(k)]
			if g == nil {
				g = &group{newest: a.v}
				groups[string(k)] = g
			}
			g.weight += a.weight
			if newer(a.v, g.newest) {
				g.newest = a.v
			}
		}
		var (
			best, newest T
			have, seen   bool
		)
		for _, k := range slices.Sorted(maps.Keys(groups)) {
			g := groups[k]
			if !seen || newer(g.newest, newest) {
				newest, seen = g.newest, true
			}
			if moreThanThird(g.weight, total) && (!have || newer(g.newest, best)) {
				best, have = g.newest, true
			}
		}
		return best, have, have && !newer(newest, best)
	}
}

// quorumRead asks every endpoint that is not sidelined and returns what
// pick vouches for once the nodes that answered hold more than 2/3 of the
// stake, waiting freshGrace more for the rest. A refusal every node would
// answer the same way (invalid parameters, not found) is returned as it
// is; lagging nodes and unreachable ones are retried with the Router's
// back-off until the quorum answers or the attempts run out (ErrNoQuorum).
//
// While the vouched answer is not settled (a node answered more), it asks
// again for up to RouterConfig.FreshSettle: a block that one honest node
// accepted, the others accept within moments, and a read must not miss a
// write acknowledged before it began. A claim that stays unvouched is a
// lie or a partitioned node; the vouched answer is returned then.
func quorumRead[T any](ctx context.Context, r *Router, op func(context.Context, *endpoint) (T, error), pick vouch[T], head func(T) api.Head) (T, error) {
	var (
		zero     T
		start    = time.Now()
		fallback T
		unsure   bool
	)
	for attempt := 1; ; {
		v, settled, err := quorumOnce(ctx, r, op, pick, head)
		switch {
		case err == nil && (settled || time.Since(start) >= r.cfg.FreshSettle):
			return v, nil
		case err == nil:
			fallback, unsure = v, true
			if serr := sleep(ctx, freshSettleStep, errUnsettled); serr != nil {
				return fallback, nil
			}
			continue
		case unsure && time.Since(start) >= r.cfg.FreshSettle:
			return fallback, nil
		case !retryable(err):
			return zero, err
		case attempt >= r.cfg.Retry.MaxAttempts:
			return zero, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		if serr := sleep(ctx, r.cfg.Retry.backoff(attempt, err), err); serr != nil {
			return zero, serr
		}
		attempt++
	}
}

// errUnsettled is why a fresh read asks again: a node answered more than
// the others vouch for yet.
var errUnsettled = errors.New("client: an answer newer than what more than 1/3 of the stake vouches for")

// freshSettleStep is how often an unsettled fresh read asks again.
const freshSettleStep = 25 * time.Millisecond

func quorumOnce[T any](ctx context.Context, r *Router, op func(context.Context, *endpoint) (T, error), pick vouch[T], head func(T) api.Head) (T, bool, error) {
	var zero T
	st, err := r.stakes.get(ctx, r)
	if err != nil {
		return zero, false, err
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
		tally  = newTally[T](st, r)
		grace  <-chan time.Time
		failed []string
	)
collect:
	for got := 0; got < asked; got++ {
		var a answer[T]
		select {
		case a = <-answers:
		case <-grace:
			break collect
		case <-ctx.Done():
			return zero, false, ctx.Err()
		}
		switch {
		case a.err != nil && !retryable(a.err) && !errors.Is(a.err, ErrWrongChain):
			return zero, false, a.err
		case a.err != nil:
			failed = append(failed, a.err.Error())
			continue
		case head(a.v).AcceptedHeight == 0:
			failed = append(failed, fmt.Sprintf("%s names no last accepted block (a node older than fresh reads)", a.e.c.URI()))
			continue
		}
		tally.add(a.e, a.v)
		if grace == nil && supermajority(tally.weight(), st.total) {
			t := time.NewTimer(freshGrace)
			defer t.Stop()
			grace = t.C
		}
	}
	failed = append(failed, tally.duplicates()...)
	weight := tally.weight()
	if !supermajority(weight, st.total) {
		return zero, false, fmt.Errorf("%w: %d of %d answered by %d of %d endpoints (%s)", ErrNoQuorum, weight, st.total, tally.nodes(), len(r.nodes), strings.Join(failed, "; "))
	}
	v, ok, settled := pick(tally.counted(), st.total)
	if !ok {
		return zero, false, fmt.Errorf("%w: no answer is vouched for by nodes holding more than 1/3 of the stake (%d of %d answered by %d endpoints)", ErrNoQuorum, weight, st.total, tally.nodes())
	}
	return v, settled, nil
}

// tally is the answers of one fresh read by the identity each endpoint
// claims. An identity two endpoints claim counts for neither: one of them
// lies, and a lie must not count twice.
type tally[T any] struct {
	st      *stake
	r       *Router
	byID    map[api.NodeID][]T
	claimed map[api.NodeID][]string // endpoints claiming each identity
}

func newTally[T any](st *stake, r *Router) *tally[T] {
	return &tally[T]{st: st, r: r, byID: map[api.NodeID][]T{}, claimed: map[api.NodeID][]string{}}
}

func (t *tally[T]) add(e *endpoint, v T) {
	id, ok := e.nodeID()
	if !ok {
		return
	}
	t.byID[id] = append(t.byID[id], v)
	t.claimed[id] = append(t.claimed[id], e.c.URI())
}

// ids lists the identities that count, in order.
func (t *tally[T]) ids() []api.NodeID {
	var out []api.NodeID
	for _, id := range sortedIDs(t.byID) {
		if len(t.claimed[id]) == 1 && t.st.weights[id] > 0 {
			out = append(out, id)
		}
	}
	return out
}

func (t *tally[T]) weight() uint64 {
	var w uint64
	for _, id := range t.ids() {
		w += t.st.weights[id]
	}
	return w
}

func (t *tally[T]) nodes() int { return len(t.ids()) }

func (t *tally[T]) counted() []vote[T] {
	var out []vote[T]
	for _, id := range t.ids() {
		out = append(out, vote[T]{v: t.byID[id][0], weight: t.st.weights[id]})
	}
	return out
}

// duplicates names the identities claimed by more than one endpoint.
func (t *tally[T]) duplicates() []string {
	var out []string
	for _, id := range sortedIDs(t.claimed) {
		if uris := t.claimed[id]; len(uris) > 1 {
			out = append(out, fmt.Sprintf("%s is claimed by %d endpoints (%s): counted for none", id, len(uris), strings.Join(uris, ", ")))
		}
	}
	return out
}

// moreThanThird is part*3 > total, without overflow.
func moreThanThird(part, total uint64) bool {
	ph, pl := bits.Mul64(part, 3)
	return ph > 0 || pl > total
}

// supermajority is part*3 > total*2, without overflow.
func supermajority(part, total uint64) bool {
	ph, pl := bits.Mul64(part, 3)
	th, tl := bits.Mul64(total, 2)
	return ph > th || (ph == th && pl > tl)
}
