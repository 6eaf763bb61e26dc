//go:build e2e

package torture

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/history"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
)

// shape is what the workload touches: a few buckets of a spread of keys
// (the filer store's key-value semantics), a few counters and a few lease
// ranges, all named after the run so that no earlier run's state shows.
type shape struct {
	clients  int
	buckets  []string
	keys     int
	counters []string
	leases   []string
	// ttl is each lease grant's time to live.
	ttl time.Duration
	// opTimeout bounds one operation: longer than a write waits for a dead
	// owner's ranges to move (the failover bound plus the client's slack).
	opTimeout time.Duration
}

func newShape(prefix string, clients int) shape {
	s := shape{clients: clients, keys: 12, ttl: 4 * time.Second, opTimeout: 45 * time.Second}
	for i := range 2 {
		s.buckets = append(s.buckets, fmt.Sprintf("%s-b%d", prefix, i))
		s.counters = append(s.counters, fmt.Sprintf("%s-c%d", prefix, i))
		s.leases = append(s.leases, fmt.Sprintf("%s-l%d", prefix, i))
	}
	return s
}

// workload runs the clients. Every operation is recorded in rec.
type workload struct {
	shape
	r    *client.Router
	rec  *history.Recorder
	seed uint64
	// seen is the highest block height an acknowledged allocation was
	// accepted at: a counter read asks its node for at least it, so that it
	// reflects every allocation acknowledged before the read began.
	seen atomic.Uint64
	// clock is the recorder's, for the record of retried writes.
	clock history.Clock

	mu sync.Mutex
	// retried are the writes the client answered definitely after an
	// earlier exchange of theirs may have applied (retried in
	// outcome_test.go), one line each.
	retried []string
	// duplicates are the earlier exchanges of writes that may have applied
	// besides the one the write's outcome records.
	duplicates []duplicate
}

// invoke records that this client invokes in.
func (c *worker) invoke(in history.Input) history.Handle {
	c.ops++
	return c.w.rec.Invoke(c.id, in)
}

// noteRetried, called once the client answered the write in it invoked
// last, keeps the earlier exchanges of it that may have applied too (the
// router sends a write again after a lost or uncertain answer: "a retried
// Allocate may reserve a second block of ids", client.Router), and their
// record if the client answered definitely.
func (c *worker) noteRetried(in history.Input, called int64, err error, s *sent) {
	if extra := int(s.applying.Load()) - 1; extra > 0 {
		c.w.mu.Lock()
		c.w.duplicates = append(c.w.duplicates, duplicate{client: c.id, op: c.ops - 1, copies: extra})
		c.w.mu.Unlock()
	}
	if !retried(err, s) {
		return
	}
	answer := "ok"
	if err != nil {
		answer = err.Error()
	}
	line := fmt.Sprintf("client %d %v called at %.3f s answered %s after exchanges that may have applied: %s",
		c.id, in, float64(called)/1e9, answer, strings.Join(s.what(), "; "))
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.retried = append(c.w.retried, line)
}

// kvKey is the history's name of a bucket's key.
func kvKey(bucket, key string) string { return bucket + "/" + key }

// run runs the clients until ctx ends.
func (w *workload) run(ctx context.Context) {
	var wg sync.WaitGroup
	for c := range w.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &worker{w: w, id: c, rng: rand.New(rand.NewPCG(w.seed, uint64(c)+1)),
				holder: fmt.Sprintf("client-%d", c), versions: map[string]uint64{}, held: map[string]uint64{}}
			for ctx.Err() == nil {
				cl.step(ctx)
			}
		}()
	}
	wg.Wait()
}

// worker is one client: one operation at a time.
type worker struct {
	w      *workload
	id     int
	rng    *rand.Rand
	holder string
	seq    int
	// ops counts this client's operations: the n-th is its n-th in the
	// history.
	ops int
	// versions is the last version this client saw of each key, for its
	// conditional puts (stale on purpose at times).
	versions map[string]uint64
	// held is the token of each lease range this client believes it holds.
	held map[string]uint64
}

func (c *worker) step(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.w.opTimeout)
	defer cancel()
	switch p := c.rng.IntN(100); {
	case p < 62:
		c.kv(ctx)
	case p < 82:
		c.counter(ctx)
	default:
		c.lease(ctx)
	}
}

func (c *worker) value() string {
	c.seq++
	return fmt.Sprintf("c%d-%d", c.id, c.seq)
}

// kv runs one filer-store operation on a random key.
func (c *worker) kv(ctx context.Context) {
	bucket := c.w.buckets[c.rng.IntN(len(c.w.buckets))]
	key := fmt.Sprintf("k%d", c.rng.IntN(c.w.keys))
	hk := kvKey(bucket, key)
	switch p := c.rng.IntN(100); {
	case p < 28:
		c.get(ctx, bucket, key)
	case p < 48:
		v := c.value()
		c.put(ctx, history.Put{Key: hk, Value: v}, api.PutManifestArgs{Bucket: bucket, Key: key, Attributes: []byte(v)})
	case p < 58:
		v := c.value()
		c.put(ctx, history.PutIfAbsent{Key: hk, Value: v}, api.PutManifestArgs{Bucket: bucket, Key: key, Attributes: []byte(v),
			Condition: &api.Condition{Kind: api.IfAbsent}})
	case p < 73:
		v := c.value()
		ver := c.versions[hk]
		if ver == 0 {
			ver = 1 // never a version: a certain precondition failure
		}
		c.put(ctx, history.PutIfVersion{Key: hk, Value: v, Version: ver}, api.PutManifestArgs{Bucket: bucket, Key: key, Attributes: []byte(v),
			Condition: &api.Condition{Kind: api.IfVersion, Version: ver}})
	case p < 85:
		c.put(ctx, history.Delete{Key: hk}, api.PutManifestArgs{Bucket: bucket, Key: key, Deleted: true})
	default:
		prefix := ""
		if c.rng.IntN(2) == 0 {
			prefix = fmt.Sprintf("k%d", c.rng.IntN(min(c.w.keys, 10)))
		}
		c.list(ctx, bucket, prefix)
	}
}

// get reads a key at its bucket's owner.
func (c *worker) get(ctx context.Context, bucket, key string) {
	hk := kvKey(bucket, key)
	h := c.invoke(history.Get{Key: hk})
	m, err := c.w.r.GetManifestAtOwner(ctx, bucket, key)
	switch {
	case errors.Is(err, client.ErrNotFound):
		h.Ok(history.GetResult{})
	case err != nil:
		h.Fail(err) // a read changes nothing
	case m.Manifest.Deleted:
		c.versions[hk] = 0
		h.Ok(history.GetResult{})
	default:
		c.versions[hk] = m.Version
		h.Ok(history.GetResult{Found: true, Value: string(m.Attributes), Version: m.Version})
	}
}

// put writes (or deletes: args.Deleted) and waits until accepted.
func (c *worker) put(ctx context.Context, in history.Input, args api.PutManifestArgs) {
	hk := kvKey(args.Bucket, args.Key)
	args.Wait, args.OwnEntry = api.WaitAccepted, true
	called := c.w.clock()
	h := c.invoke(in)
	tctx, s := withTracker(ctx)
	rep, err := c.w.r.PutManifest(tctx, args)
	c.noteRetried(in, called, err, s)
	if err == nil && rep.Receipt != nil && rep.Receipt.Status != api.StatusAccepted {
		err = fmt.Errorf("putManifest %s answered a receipt %s, not accepted", hk, rep.Receipt.Status)
		s.lost.Store(true)
	}
	switch classifyWrite(err, s) {
	case outcomeOk:
		if args.Deleted {
			c.versions[hk] = 0
			// 0: the key was not live (nothing to delete).
			h.Ok(history.WriteResult{Applied: rep.Version != 0, Version: rep.Version})
			return
		}
		c.versions[hk] = rep.Version
		h.Ok(history.WriteResult{Applied: true, Version: rep.Version})
	case outcomePrecondition:
		if args.Condition == nil {
			h.Info(fmt.Errorf("an unconditional write answered a failed precondition: %w", err))
			return
		}
		if d, ok := client.IsPreconditionFailed(err); ok {
			c.versions[hk] = d.Current
		}
		h.Ok(history.WriteResult{Applied: false})
	case outcomeRefused:
		h.Fail(err)
	default:
		h.Info(err)
	}
}

// list lists a bucket's live keys under prefix at the bucket's owner.
func (c *worker) list(ctx context.Context, bucket, prefix string) {
	h := c.invoke(history.List{Prefix: kvKey(bucket, prefix)})
	rep, err := c.w.r.ListManifestsAtOwner(ctx, api.ListManifestsArgs{Bucket: bucket, Prefix: prefix, Limit: api.MaxListLimit})
	switch {
	case err != nil:
		h.Fail(err)
	case rep.Truncated:
		h.Fail(fmt.Errorf("listing %s/%s came in more than one page", bucket, prefix))
	default:
		out := history.ListResult{Entries: make([]history.Entry, 0, len(rep.Manifests))}
		for _, m := range rep.Manifests {
			out.Entries = append(out.Entries, history.Entry{Key: kvKey(bucket, m.Manifest.Key), Value: string(m.Attributes)})
		}
		h.Ok(out)
	}
}

// counter allocates ids (waited until accepted) or reads a counter.
func (c *worker) counter(ctx context.Context) {
	rk := c.w.counters[c.rng.IntN(len(c.w.counters))]
	if c.rng.IntN(100) < 70 {
		c.allocate(ctx, rk, uint64(1+c.rng.IntN(5)))
		return
	}
	c.readCounter(ctx, rk)
}

func (c *worker) allocate(ctx context.Context, rk string, count uint64) {
	in := history.Allocate{Counter: rk, Count: count}
	called := c.w.clock()
	h := c.invoke(in)
	tctx, s := withTracker(ctx)
	got, err := c.w.r.AllocateCommitted(tctx, api.AllocateArgs{Range: rk, Count: count, Wait: api.WaitAccepted})
	c.noteRetried(in, called, err, s)
	switch classifyWrite(err, s) {
	case outcomeOk:
		raise(&c.w.seen, got.Receipt.Height)
		h.Ok(history.Allocation{Base: got.Entry.Base, Count: got.Entry.Count})
	case outcomeRefused:
		h.Fail(err)
	default:
		h.Info(err)
	}
}

// readCounter reads a counter at a node that accepted every allocation
// acknowledged before the read began (minHeight), trying each node.
func (c *worker) readCounter(ctx context.Context, rk string) {
	h := c.invoke(history.ReadCounter{Counter: rk})
	atLeast := c.w.seen.Load() // after Invoke: every earlier acknowledgement raised it
	clients := c.w.r.Clients()
	first := c.rng.IntN(len(clients))
	var errs []error
	for i := range clients {
		a, err := clients[(first+i)%len(clients)].GetAllocationAt(ctx, rk, atLeast)
		if err == nil {
			h.Ok(history.CounterValue{Next: a.Next})
			return
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	h.Fail(fmt.Errorf("no node read counter %s at height %d or above: %w", rk, atLeast, errors.Join(errs...)))
}

// lease acquires a lease range, or renews or releases the grant this
// client holds on it.
func (c *worker) lease(ctx context.Context) {
	rk := c.w.leases[c.rng.IntN(len(c.w.leases))]
	token, holds := c.held[rk]
	ttl := uint64(c.w.ttl.Milliseconds())
	switch {
	case !holds:
		in := history.Acquire{Range: rk, Holder: c.holder}
		called := c.w.clock()
		h := c.invoke(in)
		tctx, s := withTracker(ctx)
		rep, err := c.w.r.AcquireLease(tctx, api.LeaseArgs{Range: rk, Holder: c.holder, TTLMs: ttl})
		c.noteRetried(in, called, err, s)
		if c.granted(h, rep, err, s, ttl) {
			c.held[rk] = rep.Token
		}
	case c.rng.IntN(100) < 75:
		in := history.Renew{Range: rk, Holder: c.holder, Token: token}
		called := c.w.clock()
		h := c.invoke(in)
		tctx, s := withTracker(ctx)
		rep, err := c.w.r.RenewLease(tctx, api.LeaseArgs{Range: rk, Holder: c.holder, Token: token, TTLMs: ttl})
		c.noteRetried(in, called, err, s)
		if !c.granted(h, rep, err, s, ttl) && errors.Is(err, client.ErrLeaseLost) {
			delete(c.held, rk)
		}
	default:
		delete(c.held, rk)
		in := history.Release{Range: rk, Holder: c.holder, Token: token}
		called := c.w.clock()
		h := c.invoke(in)
		tctx, s := withTracker(ctx)
		rep, err := c.w.r.ReleaseLease(tctx, api.LeaseArgs{Range: rk, Holder: c.holder, Token: token})
		c.noteRetried(in, called, err, s)
		switch classifyWrite(err, s) {
		case outcomeOk:
			at, err := c.blockTime(ctx, rep.Height)
			if err != nil {
				// Released, at a time we cannot tell: the checker takes an
				// uncertain release to end the grant as early as it can.
				h.Info(fmt.Errorf("released at height %d, whose block time is unknown: %w", rep.Height, err))
				return
			}
			h.Ok(history.ReleaseResult{AtMs: at})
		case outcomeRefused:
			h.Fail(err)
		default:
			h.Info(err)
		}
	}
}

// granted records an acquire's or a renew's outcome and reports whether it
// was granted.
func (c *worker) granted(h history.Handle, rep *api.LeaseReply, err error, s *sent, ttl uint64) bool {
	if err == nil && rep.ExpiresMs < ttl {
		err = fmt.Errorf("lease of %s granted until %d ms, before its TTL of %d ms", rep.Range, rep.ExpiresMs, ttl)
		s.lost.Store(true)
	}
	switch classifyWrite(err, s) {
	case outcomeOk:
		h.Ok(history.Grant{Holder: rep.Holder, Token: rep.Token, GrantMs: rep.ExpiresMs - ttl, ExpiresMs: rep.ExpiresMs})
		return true
	case outcomeRefused:
		h.Fail(err)
	default:
		h.Info(err)
	}
	return false
}

// blockTime is the time of the accepted block at height.
func (c *worker) blockTime(ctx context.Context, height uint64) (uint64, error) {
	b, err := c.w.r.GetBlock(ctx, height)
	if err != nil {
		return 0, err
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(b.Bytes, "0x"))
	if err != nil {
		return 0, fmt.Errorf("block %d: %w", height, err)
	}
	blk, err := block.Parse(raw, block.DefaultLimits(), txs.DefaultLimits())
	if err != nil {
		return 0, fmt.Errorf("block %d: %w", height, err)
	}
	return blk.Timestamp, nil
}

// raise sets v to at least x.
func raise(v *atomic.Uint64, x uint64) {
	for {
		old := v.Load()
		if x <= old || v.CompareAndSwap(old, x) {
			return
		}
	}
}
