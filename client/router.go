package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/api"
)

var errBadRouterConfig = errors.New("invalid router config")

// RouterConfig configures a Router. Start from DefaultRouterConfig.
type RouterConfig struct {
	// Client bounds each endpoint's exchanges.
	Client Config
	// Retry bounds retries of NotReady, MempoolFull and transport failures.
	Retry Retry
	// MaxHops caps the NotOwner hints followed by one call; ownership moves
	// only when a membership changes, so more than a few hops means the nodes
	// disagree and retrying blindly would not help.
	MaxHops int
	// OwnerCacheSize caps the cached (range, P-chain height) owners.
	OwnerCacheSize int
	// PooledBatches, if positive, coalesces concurrent pooled allocations
	// (without a wait) sent to one node into allocateBatch exchanges, at
	// most this many at once per node: a request waits only while all of
	// them are busy. Zero sends each request on its own. One serves the
	// most where clients and nodes share cores: an exchange costs far more
	// than a request in it, and requests that wait ride the next exchange
	// together (docs/internals/performance-log.md, "Exchanges in flight").
	PooledBatches int
	// FailoverSlack is added to the liveness failover bound, (K+1) rounds
	// of the chain's membership, to give how long a write keeps retrying
	// while its range's owner is unreachable or not ready: the ranges of a
	// dead owner move only after that bound, and until the dead validator
	// leaves the P-chain set its proposer slots (5 s each in avalanchego's
	// proposer VM) can delay the block that moves them. Retry.MaxAttempts
	// alone would give up before the move.
	FailoverSlack time.Duration
	// FreshSettle is how long a fresh read asks again while a node answers
	// more than nodes holding more than 1/3 of the stake vouch for: a block
	// one node accepted reaches the others within moments, and a read must
	// not miss a write acknowledged before it; a claim that stays unvouched
	// that long is a lie or a partitioned node, and the vouched answer is
	// returned.
	FreshSettle time.Duration
	// Stake, if set, is the caller's own view of the validators' weights,
	// which fresh reads count (PChainStake reads it from a node's P-chain
	// API). Nil takes the validator set that more than 2/3 of the
	// endpoints report alike.
	Stake StakeView
}

// DefaultRouterConfig suits a gateway writing a few thousand ranges.
func DefaultRouterConfig() RouterConfig {
	return RouterConfig{Client: DefaultConfig(), Retry: DefaultRetry(), MaxHops: 3, OwnerCacheSize: 4096, FailoverSlack: DefaultFailoverSlack, FreshSettle: 2 * time.Second}
}

// Verify checks every bound.
func (c RouterConfig) Verify() error {
	if err := c.Client.Verify(); err != nil {
		return err
	}
	if err := c.Retry.Verify(); err != nil {
		return err
	}
	if c.MaxHops < 1 || c.OwnerCacheSize < 0 || c.PooledBatches < 0 || c.FailoverSlack < 0 || c.FreshSettle < 0 {
		return fmt.Errorf("%w: MaxHops %d, OwnerCacheSize %d, PooledBatches %d, FailoverSlack %v, FreshSettle %v", errBadRouterConfig, c.MaxHops, c.OwnerCacheSize, c.PooledBatches, c.FailoverSlack, c.FreshSettle)
	}
	return nil
}

// endpoint is one node as the Router sees it.
type endpoint struct {
	c     *Client
	batch *batcher // nil unless RouterConfig.PooledBatches

	mu        sync.Mutex
	id        api.NodeID // guarded by mu; valid if known
	known     bool       // guarded by mu
	fails     int        // guarded by mu; consecutive transport failures
	downUntil time.Time  // guarded by mu; skipped for reads until then
}

func (e *endpoint) down(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.downUntil.After(now)
}

func (e *endpoint) nodeID() (api.NodeID, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.id, e.known
}

// Router sends each write to its range's owner among several endpoints and
// each read to any healthy endpoint, retrying what the contract marks as
// transient. It never sends a write to a node it believes is not the owner
// except to learn the owner: the chain has exactly one writer per range and
// membership, so there is nothing to fail over to.
//
// A retried Allocate may reserve a second block of ids if the first request
// reached the owner before the failure; ids are then wasted, never issued
// twice. Router is safe for concurrent use.
type Router struct {
	nodes   []*endpoint
	chainID api.ID // checked against getNode when the configured chain is an ID, not an alias
	checkID bool
	cfg     RouterConfig
	owners  *ownerCache
	next    atomic.Uint64 // read rotation
	stakes  stakes        // the validators' weights fresh reads count
	bound   failoverBound // how long a write waits for its owner's ranges to move
}

// NewRouter returns a Router over the nodes at nodeURIs, all serving chainID.
func NewRouter(nodeURIs []string, chainID string, cfg RouterConfig) (*Router, error) {
	if err := cfg.Verify(); err != nil {
		return nil, err
	}
	if len(nodeURIs) == 0 {
		return nil, errNoEndpoint
	}
	r := &Router{cfg: cfg, owners: newOwnerCache(cfg.OwnerCacheSize)}
	if id, err := api.ParseID(chainID); err == nil {
		r.chainID, r.checkID = id, true
	}
	seen := make(map[string]bool, len(nodeURIs))
	for _, uri := range nodeURIs {
		c, err := New(uri, chainID, cfg.Client)
		if err != nil {
			return nil, err
		}
		if seen[c.Endpoint()] {
			continue
		}
		seen[c.Endpoint()] = true
		e := &endpoint{c: c}
		if cfg.PooledBatches > 0 {
			e.batch = newBatcher(c, cfg.PooledBatches)
		}
		r.nodes = append(r.nodes, e)
	}
	return r, nil
}

// Clients returns the per-endpoint clients, in the order given.
func (r *Router) Clients() []*Client {
	out := make([]*Client, len(r.nodes))
	for i, e := range r.nodes {
		out[i] = e.c
	}
	return out
}

// Allocate reserves ids at args.Range's owner.
// A pooled request without a wait rides in an allocateBatch exchange when
// RouterConfig.PooledBatches is set; its answer is the same.
//
// A pooled answer that is not pooled or carries another count than asked is
// refused (ErrMalformedResponse): ids of another request must never be used.
func (r *Router) Allocate(ctx context.Context, args api.AllocateArgs) (*api.AllocateReply, error) {
	batched := r.cfg.PooledBatches > 0 && args.Pooled && !args.Wait.Waits()
	rep, err := write(ctx, r, args.Range, func(ctx context.Context, e *endpoint) (*api.AllocateReply, error) {
		if batched {
			return e.batch.allocate(ctx, args)
		}
		return e.c.Allocate(ctx, args)
	})
	if err == nil && args.Pooled && (!rep.Pooled || rep.Count != args.Count) {
		return nil, fmt.Errorf("%w: pooled allocate of %d ids of %q answered %d ids (pooled %t)", ErrMalformedResponse, args.Count, args.Range, rep.Count, rep.Pooled)
	}
	return rep, err
}

// Committed is an allocation whose ids are committed: the owner's answer,
// the accepted receipt, and this request's entry in it.
type Committed struct {
	Reply   *api.AllocateReply
	Receipt *api.ReceiptReply
	Entry   api.ReceiptEntry
}

// AllocateCommitted allocates through the range's owner and returns once
// the ids are committed: it waits for the owner's transaction (following a
// re-pin to its replacement) and returns this request's entry of the
// accepted receipt. A rejected transaction was never applied (when the
// range's owner changed before it was included, for instance), so the
// request is sent again, to the range's owner then, up to the retry
// policy's MaxAttempts; after that the error wraps ErrTxRejected.
// args.Pooled is cleared; args.Wait api.WaitFinal waits for a final
// receipt (with its certificate), anything else for an accepted one.
func (r *Router) AllocateCommitted(ctx context.Context, args api.AllocateArgs) (*Committed, error) {
	for attempt := 1; ; attempt++ {
		c, err := r.allocateCommitted(ctx, args)
		if !errors.Is(err, ErrTxRejected) || attempt >= r.cfg.Retry.MaxAttempts {
			return c, err
		}
		r.owners.forget(args.Range)
		if serr := sleep(ctx, r.cfg.Retry.backoff(attempt, err), err); serr != nil {
			return nil, serr
		}
	}
}

func (r *Router) allocateCommitted(ctx context.Context, args api.AllocateArgs) (*Committed, error) {
	if args.Wait != api.WaitFinal {
		args.Wait = api.WaitAccepted
	}
	args.Pooled = false
	args.OwnEntry = true
	rep, err := r.Allocate(ctx, args)
	var late api.TimeoutData
	if decodeData(err, api.CodeTimeout, &late) && late.TxID != (api.ID{}) {
		// The owner's wait ran out: the transaction exists, so keep
		// following it rather than signing another.
		rep, err = &api.AllocateReply{TxID: late.TxID, Index: late.Index}, nil
	}
	if err != nil {
		return nil, err
	}
	rc := rep.Receipt
	if rc == nil || rc.Status != api.StatusAccepted || (args.Wait == api.WaitFinal && !rc.Final) {
		if rc, err = r.waitReceipt(ctx, rep.TxID, args.Wait); err != nil {
			return nil, err
		}
	}
	e, ok := rc.Entry(rep.Index)
	if !ok || e.Range != args.Range {
		return nil, fmt.Errorf("%w: receipt of %s has no entry %d for range %q (%d entries from %d)", ErrMalformedResponse, rc.TxID, rep.Index, args.Range, len(rc.Entries), rc.First)
	}
	if e.Count != args.Count || e.Base < args.Floor {
		return nil, fmt.Errorf("%w: entry %d of %s is %d ids from %d, want %d at or above %d", ErrMalformedResponse, rep.Index, rc.TxID, e.Count, e.Base, args.Count, args.Floor)
	}
	return &Committed{Reply: rep, Receipt: rc, Entry: e}, nil
}

// PutManifest commits a manifest at args.Bucket's owner.
func (r *Router) PutManifest(ctx context.Context, args api.PutManifestArgs) (*api.PutManifestReply, error) {
	return write(ctx, r, args.Bucket, func(ctx context.Context, e *endpoint) (*api.PutManifestReply, error) {
		return e.c.PutManifest(ctx, args)
	})
}

// AcquireLease asks args.Range's owner for its lease.
func (r *Router) AcquireLease(ctx context.Context, args api.LeaseArgs) (*api.LeaseReply, error) {
	return write(ctx, r, args.Range, func(ctx context.Context, e *endpoint) (*api.LeaseReply, error) {
		return e.c.AcquireLease(ctx, args)
	})
}

// RenewLease asks args.Range's owner to extend a grant.
func (r *Router) RenewLease(ctx context.Context, args api.LeaseArgs) (*api.LeaseReply, error) {
	return write(ctx, r, args.Range, func(ctx context.Context, e *endpoint) (*api.LeaseReply, error) {
		return e.c.RenewLease(ctx, args)
	})
}

// ReleaseLease asks args.Range's owner to end a grant.
func (r *Router) ReleaseLease(ctx context.Context, args api.LeaseArgs) (*api.LeaseReply, error) {
	return write(ctx, r, args.Range, func(ctx context.Context, e *endpoint) (*api.LeaseReply, error) {
		return e.c.ReleaseLease(ctx, args)
	})
}

// GetLease asks any healthy endpoint.
func (r *Router) GetLease(ctx context.Context, rangeKey string) (*api.LeaseStateReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.LeaseStateReply, error) {
		return e.c.GetLease(ctx, rangeKey)
	})
}

// GetReceipt asks any healthy endpoint.
func (r *Router) GetReceipt(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.ReceiptReply, error) {
		return e.c.GetReceipt(ctx, txID)
	})
}

// GetAllocation asks any healthy endpoint.
func (r *Router) GetAllocation(ctx context.Context, rangeKey string) (*api.AllocationReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.AllocationReply, error) {
		return e.c.GetAllocation(ctx, rangeKey)
	})
}

// GetManifest asks any healthy endpoint.
func (r *Router) GetManifest(ctx context.Context, bucket, key string) (*api.ManifestReply, error) {
	return r.GetManifestAt(ctx, bucket, key, 0)
}

// GetManifestAt asks any healthy endpoint that accepted minHeight: one
// behind it answers NotReady, and the next is asked.
func (r *Router) GetManifestAt(ctx context.Context, bucket, key string, minHeight uint64) (*api.ManifestReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.ManifestReply, error) {
		return e.c.GetManifestAt(ctx, bucket, key, minHeight)
	})
}

// GetOwner asks any healthy endpoint and caches the answer for routing.
func (r *Router) GetOwner(ctx context.Context, rangeKey string) (*api.OwnerReply, error) {
	reply, _, err := r.getOwner(ctx, rangeKey)
	return reply, err
}

// GetMembership asks any healthy endpoint.
func (r *Router) GetMembership(ctx context.Context) (*api.MembershipReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.MembershipReply, error) {
		return e.c.GetMembership(ctx)
	})
}

// GetNode asks any healthy endpoint (use Clients to ask a given one).
func (r *Router) GetNode(ctx context.Context) (*api.NodeReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.NodeReply, error) {
		return r.learn(ctx, e)
	})
}

// WaitForReceipt polls any healthy endpoint until txID is accepted or
// rejected, following re-pins: when the owner re-signs a stale transaction
// for a new membership, the old receipt names the replacement, and the returned
// receipt is the replacement's (its TxID tells which). A rejected
// transaction returns its receipt and an error wrapping ErrTxRejected. An
// "unknown" transaction is polled too (it may not have been gossiped yet),
// so ctx must carry the caller's patience.
func (r *Router) WaitForReceipt(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	return r.waitReceipt(ctx, txID, api.WaitAccepted)
}

// WaitFinal is WaitForReceipt that also waits, for an accepted
// transaction, until a finality certificate covers it.
func (r *Router) WaitFinal(ctx context.Context, txID api.ID) (*api.ReceiptReply, error) {
	return r.waitReceipt(ctx, txID, api.WaitFinal)
}

// GetCertificate asks any healthy endpoint for the certificate covering
// height.
func (r *Router) GetCertificate(ctx context.Context, height uint64) (*api.CertificateReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.CertificateReply, error) {
		return e.c.GetCertificate(ctx, height)
	})
}

// GetBlock asks any healthy endpoint for the accepted block at height.
func (r *Router) GetBlock(ctx context.Context, height uint64) (*api.BlockReply, error) {
	return readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.BlockReply, error) {
		return e.c.GetBlock(ctx, height)
	})
}

func (r *Router) waitReceipt(ctx context.Context, txID api.ID, until api.Wait) (*api.ReceiptReply, error) {
	return waitForReceipt(ctx, txID, r.cfg.Retry, until, func(ctx context.Context, id api.ID) (*api.ReceiptReply, error) {
		return readOnce(ctx, r, func(ctx context.Context, e *endpoint) (*api.ReceiptReply, error) {
			return e.c.receiptOnce(until)(ctx, id)
		})
	})
}

// getOwner is GetOwner that also says which endpoint answered.
func (r *Router) getOwner(ctx context.Context, rangeKey string) (*api.OwnerReply, *endpoint, error) {
	var from *endpoint
	reply, err := readAny(ctx, r, func(ctx context.Context, e *endpoint) (*api.OwnerReply, error) {
		from = e
		return e.c.GetOwner(ctx, rangeKey)
	})
	if err != nil {
		return nil, nil, err
	}
	r.owners.put(rangeKey, reply.PChainHeight, reply.Owner)
	return reply, from, nil
}

// route picks the endpoint to send rangeKey's write to: its cached or
// reported owner, or, if the owner is none of ours, the endpoint that named
// it, whose NotOwner answer will then carry the hint for the caller.
func (r *Router) route(ctx context.Context, rangeKey string) (*endpoint, error) {
	if owner, ok := r.owners.get(rangeKey); ok {
		if e := r.knownByID(owner); e != nil {
			return e, nil
		}
	}
	reply, from, err := r.getOwner(ctx, rangeKey)
	if err != nil {
		return nil, err
	}
	e, err := r.findByID(ctx, reply.Owner)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return from, nil
	}
	return e, nil
}

func (r *Router) knownByID(id api.NodeID) *endpoint {
	for _, e := range r.nodes {
		if nid, ok := e.nodeID(); ok && nid == id {
			return e
		}
	}
	return nil
}

// findByID returns the endpoint of node id, learning unknown endpoints'
// identities on the way. It returns (nil, nil) if no endpoint is id, and
// the last learning failure if some endpoint could not say who it is.
func (r *Router) findByID(ctx context.Context, id api.NodeID) (*endpoint, error) {
	if e := r.knownByID(id); e != nil {
		return e, nil
	}
	var lastErr error
	now := time.Now()
	for _, e := range r.nodes {
		if nid, known := e.nodeID(); known {
			if nid == id { // learnt concurrently since knownByID
				return e, nil
			}
			continue
		}
		if e.down(now) {
			// Asking a node that just failed would stall every route on its
			// timeout; report it as the transient failure it is.
			lastErr = fmt.Errorf("%w: %s is sidelined after failures; its identity is unknown", ErrTransport, e.c.URI())
			continue
		}
		reply, err := r.learn(ctx, e)
		if err != nil {
			lastErr = err
			continue
		}
		if reply.NodeID == id {
			return e, nil
		}
	}
	return nil, lastErr
}

// learn asks e who it is and remembers the answer.
func (r *Router) learn(ctx context.Context, e *endpoint) (*api.NodeReply, error) {
	reply, err := e.c.GetNode(ctx)
	r.observe(e, err)
	if err != nil {
		return nil, err
	}
	if r.checkID && reply.ChainID != r.chainID {
		return nil, fmt.Errorf("%w: %s serves %s, want %s", ErrWrongChain, e.c.URI(), reply.ChainID, r.chainID)
	}
	e.mu.Lock()
	e.id, e.known = reply.NodeID, true
	e.mu.Unlock()
	return reply, nil
}

// observe keeps endpoint health: a transport failure sidelines the endpoint
// for a growing while and forgets its identity (a restarted node may be
// another node); any answer restores it.
func (r *Router) observe(e *endpoint, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err == nil:
		e.fails, e.downUntil = 0, time.Time{}
	case errors.Is(err, ErrTransport):
		r.sideline(e, 0)
		e.known = false
	}
}

// sideline sets e aside after one more failure, for the back-off of its
// failures so far or atLeast, whichever is longer. The caller holds e.mu.
func (r *Router) sideline(e *endpoint, atLeast time.Duration) {
	e.fails++
	e.downUntil = time.Now().Add(max(atLeast, r.cfg.Retry.delay(e.fails)))
}

// silent reports whether a request to e failed because the caller's
// deadline passed first, and then sidelines e for as long as it kept the
// caller waiting. A stopped process or a cut link takes requests and
// answers none, so no transport error ever reveals it, and a caller that
// bounds each request would otherwise be sent back to it every time. Its
// identity is kept: it did not restart.
func (r *Router) silent(ctx context.Context, e *endpoint, waited time.Duration) bool {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r.sideline(e, waited)
	return true
}

// ask runs op at e and keeps e's health from the outcome; silent reports
// that e let the caller's deadline pass without an answer.
func ask[T any](ctx context.Context, r *Router, e *endpoint, op func(context.Context, *endpoint) (T, error)) (v T, silent bool, err error) {
	began := time.Now()
	v, err = op(ctx, e)
	r.observe(e, err)
	if err != nil {
		silent = r.silent(ctx, e, time.Since(began))
	}
	return v, silent, err
}

// pick returns the next endpoint in rotation that is not sidelined, or the
// one that recovers soonest if all are.
func (r *Router) pick() *endpoint {
	now := time.Now()
	start := int(r.next.Add(1) % uint64(len(r.nodes)))
	var best *endpoint
	var bestUntil time.Time
	for i := range r.nodes {
		e := r.nodes[(start+i)%len(r.nodes)]
		e.mu.Lock()
		until := e.downUntil
		e.mu.Unlock()
		if !until.After(now) {
			return e
		}
		if best == nil || until.Before(bestUntil) {
			best, bestUntil = e, until
		}
	}
	return best
}

func (r *Router) anyHealthy() bool {
	now := time.Now()
	for _, e := range r.nodes {
		if !e.down(now) {
			return true
		}
	}
	return false
}

// readOnce tries healthy endpoints until one answers or all failed to be
// reached, without back-off.
func readOnce[T any](ctx context.Context, r *Router, op func(context.Context, *endpoint) (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	for range r.nodes {
		v, _, err = ask(ctx, r, r.pick(), op)
		if !errors.Is(err, ErrTransport) || !r.anyHealthy() {
			return v, err
		}
	}
	return v, err
}

// readAny is readOnce with back-off on retryable failures.
func readAny[T any](ctx context.Context, r *Router, op func(context.Context, *endpoint) (T, error)) (T, error) {
	var last error
	for attempt := 1; ; attempt++ {
		v, err := readOnce(ctx, r, op)
		if err == nil || !retryable(err) {
			return v, withLast(ctx, err, last)
		}
		last = err
		if attempt >= r.cfg.Retry.MaxAttempts {
			return v, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		if serr := sleep(ctx, r.cfg.Retry.backoff(attempt, err), err); serr != nil {
			return v, serr
		}
	}
}

// write sends op to rangeKey's owner, following NotOwner hints and retrying
// transient failures. A transport failure or NotReady re-resolves the owner
// before the next attempt, since both may mean the membership moved on.
func write[T any](ctx context.Context, r *Router, rangeKey string, op func(context.Context, *endpoint) (T, error)) (T, error) {
	return atOwner(ctx, r, rangeKey, true, op)
}

// atOwner sends op to rangeKey's owner, following NotOwner hints and
// retrying what is transient. With waitForMove, an owner that cannot be
// reached or is not ready is waited out up to the failover bound (its
// ranges move by then), past Retry.MaxAttempts: what a write needs. A read
// at the owner gives up after MaxAttempts instead, and its caller reads
// elsewhere.
func atOwner[T any](ctx context.Context, r *Router, rangeKey string, waitForMove bool, op func(context.Context, *endpoint) (T, error)) (T, error) {
	var (
		zero   T
		target *endpoint
		hops   int
		last   error
		// ownerDownSince is when the owner was first found unreachable
		// or not ready: from then on the write waits for the move.
		ownerDownSince time.Time
	)
	for attempt := 1; ; {
		var (
			v   T
			err error
		)
		if target == nil {
			target, err = r.route(ctx, rangeKey)
		}
		if err == nil {
			var silent bool
			v, silent, err = ask(ctx, r, target, op)
			if err == nil {
				return v, nil
			}
			if silent {
				// Its ranges may have moved at the same P-chain height
				// (the liveness membership), which only another node can
				// tell: the next request looks the owner up again.
				r.owners.forget(rangeKey)
			}
		}
		if hint, ok := IsNotOwner(err); ok {
			next, ferr := r.follow(ctx, rangeKey, hint, &hops, err)
			switch {
			case ferr != nil && !retryable(ferr):
				return zero, withLast(ctx, ferr, last)
			case ferr != nil:
				err = ferr
			case next != target:
				target = next
				continue
			}
			// The owner we were sent to names itself (or is unreachable to
			// identify): our view and its view of the membership disagree for now.
		}
		if !retryable(err) && !errors.Is(err, ErrNotOwner) {
			return zero, withLast(ctx, err, last)
		}
		last = err
		if ownerDown(err) && ownerDownSince.IsZero() {
			ownerDownSince = time.Now()
		}
		if attempt >= r.cfg.Retry.MaxAttempts {
			if !waitForMove || !ownerDown(err) {
				return zero, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
			}
			if bound := r.bound.get(ctx, r); time.Since(ownerDownSince) >= bound {
				return zero, fmt.Errorf("gave up after %d attempts and the failover bound (%v: the owner's ranges did not move): %w", attempt, bound, err)
			}
		}
		if errors.Is(err, ErrTransport) || errors.Is(err, ErrNotReady) || errors.Is(err, ErrNotOwner) {
			r.owners.forget(rangeKey)
			target = nil
		}
		if serr := sleep(ctx, r.cfg.Retry.backoff(attempt, err), err); serr != nil {
			return zero, serr
		}
		attempt++
	}
}

// follow turns a NotOwner hint into the endpoint to try next.
func (r *Router) follow(ctx context.Context, rangeKey string, hint api.NotOwnerData, hops *int, notOwner error) (*endpoint, error) {
	*hops++
	if *hops > r.cfg.MaxHops {
		return nil, fmt.Errorf("%w: range %q: more than %d NotOwner hops: %w", ErrNoRoute, rangeKey, r.cfg.MaxHops, notOwner)
	}
	r.owners.put(rangeKey, hint.PChainHeight, hint.Owner)
	next, err := r.findByID(ctx, hint.Owner)
	if err != nil {
		return nil, err
	}
	if next == nil {
		return nil, fmt.Errorf("%w: range %q is owned by %s at P-chain height %d, which is not one of the %d endpoints: %w",
			ErrNoRoute, rangeKey, hint.Owner, hint.PChainHeight, len(r.nodes), notOwner)
	}
	return next, nil
}

// withLast adds the last retried error to a failure caused by ctx ending
// mid-request, so that "deadline exceeded" still says what was retried.
func withLast(ctx context.Context, err, last error) error {
	if err == nil || last == nil || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w; last error: %w", err, last)
}
