// Package schaintest is a fake S-Chain for the tests of the SeaweedFS
// integration: n nodes on 127.0.0.1 serving the real JSON-RPC contract
// (vm/api types, gorilla/rpc with avalanchego's codec, as the VM), with
// counters per range, committed receipts, per-owner pools, write tokens, and
// faults to inject (a node down, NotReady, slow blocks). It records every
// allocation it answered, so a test can check that no id was issued twice.
//
// Finality: an accepted receipt becomes final (a certificate of more than
// 2/3 of the stake covers its block) SetFinalAfter after acceptance, at
// once by default, or never while SetFinalityStalled holds (a validator of
// three equal ones is dead). allocate with wait "final" answers once the
// receipt is final, or CodeTimeout naming the transaction when its wait
// runs out first; getReceipt shows final, certifiedBy.
package schaintest

import (
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/execute"
)

// Token is the write token the fake accepts.
const Token = "schaintest-token"

// PoolChunk is how many ids an owner's pool reserves at a time.
const PoolChunk = 1024

// Chain is the fake. Its methods are safe for concurrent use.
type Chain struct {
	ChainID ids.ID
	NodeIDs []ids.NodeID
	URIs    []string
	servers []*httptest.Server

	mu         sync.Mutex
	down       map[int]bool
	counters   map[string]uint64
	pools      map[poolKey][2]uint64 // [next, end) of each owner's pool
	receipts   map[ids.ID]api.ReceiptReply
	accepted   map[ids.ID]time.Time // when each receipt was accepted
	finalAfter time.Duration
	stalled    bool
	maxWait    time.Duration // the node's bound of a wait (0: a minute)
	issued     []Allocation
	notReady   int           // the next notReady write calls answer NotReady
	blockTime  time.Duration // a waited allocation takes this long
	delay      time.Duration // every allocation takes at least this long
	owner      func(rng string, alive []int) int
	calls      map[string]int
	leases     map[string]state.Lease
	fences     map[string]uint64
	leaseClock func() time.Time // the block time leases are decided at
}

type poolKey struct {
	node int
	rng  string
}

// Allocation is one answered allocation: ids [Base, Base+Count) of Range by
// node Node; Pooled if cut from a pool.
type Allocation struct {
	Range  string
	Base   uint64
	Count  uint64
	Node   int
	Pooled bool
}

// New starts n nodes; they stop when the test ends. A range's owner is
// CRC32(range) modulo the nodes that are up, so killing a node moves its
// ranges at once (the real chain waits for a liveness round).
func New(t testing.TB, n int) *Chain {
	c := &Chain{
		ChainID: ids.GenerateTestID(), down: map[int]bool{}, counters: map[string]uint64{},
		pools: map[poolKey][2]uint64{}, receipts: map[ids.ID]api.ReceiptReply{}, accepted: map[ids.ID]time.Time{}, calls: map[string]int{},
		owner:  func(rng string, alive []int) int { return alive[crc32.ChecksumIEEE([]byte(rng))%uint32(len(alive))] },
		leases: map[string]state.Lease{}, fences: map[string]uint64{}, leaseClock: time.Now,
	}
	for i := range n {
		c.NodeIDs = append(c.NodeIDs, ids.GenerateTestNodeID())
		server := rpc.NewServer()
		server.RegisterCodec(avajson.NewCodec(), "application/json")
		if err := server.RegisterService(&service{c: c, i: i}, api.Service); err != nil {
			t.Fatalf("schaintest: %v", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/ext/bc/"+c.ChainID.String(), c.gate(i, server))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		c.servers = append(c.servers, srv)
		c.URIs = append(c.URIs, srv.URL)
	}
	return c
}

// gate answers 503 without a JSON-RPC body while node i is down, like a
// proxy in front of a dead node, and counts calls.
func (c *Chain) gate(i int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		down := c.down[i]
		c.mu.Unlock()
		if down {
			// Drop the connection: what a killed node looks like.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// SetDown marks node i down (connections are dropped) or up.
func (c *Chain) SetDown(i int, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down[i] = down
}

// SetNotReady makes the next n write calls answer NotReady.
func (c *Chain) SetNotReady(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notReady = n
}

// SetBlockTime makes every waited allocation take d (a block's latency).
func (c *Chain) SetBlockTime(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blockTime = d
}

// SetDelay makes every allocation, pooled ones included, take d.
func (c *Chain) SetDelay(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delay = d
}

// SetFinalAfter makes an accepted receipt final d after its acceptance.
func (c *Chain) SetFinalAfter(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finalAfter = d
}

// SetMaxWait bounds every wait for finality, as a node's maxWaitMs does.
func (c *Chain) SetMaxWait(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxWait = d
}

// SetFinalityStalled stops (or resumes) finality: no receipt becomes final
// while it holds, as when one of three equal validators is dead.
func (c *Chain) SetFinalityStalled(stalled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stalled = stalled
}

// finalLocked marks rc final if a certificate covers it by now.
func (c *Chain) finalLocked(rc *api.ReceiptReply) {
	at, ok := c.accepted[rc.TxID]
	if ok && rc.Status == api.StatusAccepted && !c.stalled && time.Since(at) >= c.finalAfter {
		rc.Final, rc.CertifiedBy = true, rc.Height
	}
}

// SetCounter sets a range's counter, as if allocated up to next.
func (c *Chain) SetCounter(rng string, next uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counters[rng] = next
}

// Counter is a range's next unissued id.
func (c *Chain) Counter(rng string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counters[rng]
}

// Owner is the node owning rng now.
func (c *Chain) Owner(rng string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownerLocked(rng)
}

func (c *Chain) ownerLocked(rng string) int {
	var alive []int
	for i := range c.NodeIDs {
		if !c.down[i] {
			alive = append(alive, i)
		}
	}
	if len(alive) == 0 {
		return 0
	}
	return c.owner(rng, alive)
}

// Issued returns every allocation answered so far.
func (c *Chain) Issued() []Allocation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Allocation(nil), c.issued...)
}

// Calls is how many times method was answered (by any node).
func (c *Chain) Calls(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

// CheckUnique returns an error naming the first id of a range handed out
// twice by the fake (pools are cut from committed chunks, so a chunk and the
// pieces cut from it are not both counted).
func (c *Chain) CheckUnique() error {
	type iv struct{ lo, hi uint64 }
	byRange := map[string][]iv{}
	for _, a := range c.Issued() {
		if a.Pooled {
			continue // cut from a chunk recorded as its own allocation
		}
		for _, o := range byRange[a.Range] {
			if a.Base < o.hi && o.lo < a.Base+a.Count {
				return fmt.Errorf("range %s: [%d,%d) overlaps [%d,%d)", a.Range, a.Base, a.Base+a.Count, o.lo, o.hi)
			}
		}
		byRange[a.Range] = append(byRange[a.Range], iv{a.Base, a.Base + a.Count})
	}
	return nil
}

type service struct {
	c *Chain
	i int
}

func authorized(r *http.Request) error {
	if r.Header.Get("Authorization") != "Bearer "+Token {
		return &json2.Error{Code: json2.ErrorCode(api.CodeUnauthorized), Message: "unauthorized", Data: api.UnauthorizedData{Reason: api.ReasonInvalid}}
	}
	return nil
}

func (s *service) count(method string) {
	s.c.mu.Lock()
	s.c.calls[method]++
	s.c.mu.Unlock()
}

func (s *service) GetNode(_ *http.Request, _ *api.Empty, reply *api.NodeReply) error {
	s.count("getNode")
	*reply = api.NodeReply{NodeID: s.c.NodeIDs[s.i], NetworkID: 1337, ChainID: s.c.ChainID}
	return nil
}

func (s *service) GetOwner(_ *http.Request, args *api.RangeArgs, reply *api.OwnerReply) error {
	s.count("getOwner")
	*reply = api.OwnerReply{Range: args.Range, Owner: s.c.NodeIDs[s.c.Owner(args.Range)], PChainHeight: 7}
	return nil
}

func (s *service) GetAllocation(_ *http.Request, args *api.RangeArgs, reply *api.AllocationReply) error {
	s.count("getAllocation")
	*reply = api.AllocationReply{Range: args.Range, Next: s.c.Counter(args.Range)}
	return nil
}

func (s *service) GetReceipt(_ *http.Request, args *api.TxIDArgs, reply *api.ReceiptReply) error {
	s.count("getReceipt")
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	rc, ok := s.c.receipts[args.TxID]
	if !ok {
		rc = api.ReceiptReply{TxID: args.TxID, Status: api.StatusUnknown}
	}
	s.c.finalLocked(&rc)
	*reply = rc
	return nil
}

func (s *service) Allocate(r *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	s.count("allocate")
	if err := authorized(r); err != nil {
		return err
	}
	if args.Count == 0 || args.Count > 1<<20 || strings.ContainsAny(args.Range, " \t") {
		return &json2.Error{Code: json2.ErrorCode(api.CodeInvalidParams), Message: fmt.Sprintf("bad allocate %+v", *args)}
	}
	c := s.c
	c.mu.Lock()
	delay := c.delay
	c.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	c.mu.Lock()
	if c.notReady > 0 {
		c.notReady--
		c.mu.Unlock()
		return &json2.Error{Code: json2.ErrorCode(api.CodeNotReady), Message: "not ready", Data: api.RetryData{RetryAfterMs: 10}}
	}
	if owner := c.ownerLocked(args.Range); owner != s.i {
		c.mu.Unlock()
		return &json2.Error{Code: json2.ErrorCode(api.CodeNotOwner), Message: fmt.Sprintf("not the owner of %q", args.Range),
			Data: api.NotOwnerData{Range: args.Range, Owner: c.NodeIDs[owner], PChainHeight: 7}}
	}
	if args.Pooled {
		defer c.mu.Unlock()
		k := poolKey{s.i, args.Range}
		p := c.pools[k]
		if p[1]-p[0] < args.Count {
			base := c.counters[args.Range]
			c.counters[args.Range] = base + PoolChunk
			c.issued = append(c.issued, Allocation{Range: args.Range, Base: base, Count: PoolChunk, Node: s.i})
			p = [2]uint64{base, base + PoolChunk}
		}
		c.pools[k] = [2]uint64{p[0] + args.Count, p[1]}
		c.issued = append(c.issued, Allocation{Range: args.Range, Base: p[0], Count: args.Count, Node: s.i, Pooled: true})
		*reply = api.AllocateReply{TxID: ids.GenerateTestID(), Owner: c.NodeIDs[s.i], Pooled: true, Base: p[0], Count: args.Count}
		return nil
	}
	base := max(c.counters[args.Range], args.Floor)
	c.counters[args.Range] = base + args.Count
	c.issued = append(c.issued, Allocation{Range: args.Range, Base: base, Count: args.Count, Node: s.i})
	txID := ids.GenerateTestID()
	rc := api.ReceiptReply{TxID: txID, Status: api.StatusAccepted, Height: 3,
		Entries: []state.ReceiptEntry{{Range: "other", Base: 1, Count: 1}, {Range: args.Range, Base: base, Count: args.Count}}}
	c.receipts[txID] = rc
	c.accepted[txID] = time.Now().Add(c.blockTime)
	wait := c.blockTime
	c.mu.Unlock()
	*reply = api.AllocateReply{TxID: txID, Index: 1, PChainHeight: 7, Owner: c.NodeIDs[s.i]}
	if args.Wait.Waits() {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.Context().Done():
				t.Stop()
				return r.Context().Err()
			case <-t.C:
			}
		}
		if args.Wait == api.WaitFinal {
			return c.waitFinal(r, args, reply, rc)
		}
		reply.Receipt = &rc
	}
	return nil
}

// waitFinal answers once rc is final, or CodeTimeout when waitMs (or the
// request) ends first.
func (c *Chain) waitFinal(r *http.Request, args *api.AllocateArgs, reply *api.AllocateReply, rc api.ReceiptReply) error {
	bound := time.Minute
	c.mu.Lock()
	if c.maxWait > 0 {
		bound = c.maxWait
	}
	c.mu.Unlock()
	if args.WaitMs > 0 {
		bound = min(bound, time.Duration(args.WaitMs)*time.Millisecond)
	}
	deadline := time.Now().Add(bound)
	for {
		c.mu.Lock()
		c.finalLocked(&rc)
		c.mu.Unlock()
		if rc.Final {
			reply.Receipt = &rc
			return nil
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			return &json2.Error{Code: json2.ErrorCode(api.CodeTimeout), Message: "accepted, not final yet; poll getReceipt",
				Data: api.TimeoutData{TxID: rc.TxID, Index: reply.Index, WaitMs: uint64(bound / time.Millisecond)}}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// SetLeaseClock sets the block time leases are decided at (default the
// real clock), so that a test moves it past a TTL without waiting.
func (c *Chain) SetLeaseClock(now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaseClock = now
}

// Lease is the lease of rng and whether it holds at the lease clock's now.
func (c *Chain) Lease(rng string) (state.Lease, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.leases[rng]
	return l, ok && l.Held(uint64(c.leaseClock().UnixMilli()))
}

func (s *service) AcquireLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseAcquire, args, reply)
}

func (s *service) RenewLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseRenew, args, reply)
}

func (s *service) ReleaseLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseRelease, args, reply)
}

// lease decides one lease operation by the chain's rule (execute.DecideLease)
// at the lease clock, at the range's owner.
func (s *service) lease(r *http.Request, op txs.LeaseOp, args *api.LeaseArgs, reply *api.LeaseReply) error {
	s.count(op.String() + "Lease")
	if err := authorized(r); err != nil {
		return err
	}
	en := txs.LeaseEntry{Op: op, Range: args.Range, Holder: args.Holder, Token: args.Token, TTLMs: args.TTLMs}
	if err := en.Verify(txs.DefaultLimits()); err != nil {
		return &json2.Error{Code: json2.ErrorCode(api.CodeInvalidParams), Message: err.Error()}
	}
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if owner := c.ownerLocked(args.Range); owner != s.i {
		return &json2.Error{Code: json2.ErrorCode(api.CodeNotOwner), Message: fmt.Sprintf("not the owner of %q", args.Range),
			Data: api.NotOwnerData{Range: args.Range, Owner: c.NodeIDs[owner], PChainHeight: 7}}
	}
	cur, ok := c.leases[args.Range]
	rc, u, err := execute.DecideLease(en, cur, ok, c.fences[args.Range], uint64(c.leaseClock().UnixMilli()))
	if err != nil {
		return &json2.Error{Code: json2.ErrorCode(api.CodeRejected), Message: err.Error()}
	}
	if u != nil {
		if u.Fence != 0 {
			c.fences[u.Range] = u.Fence
		}
		if u.Lease == nil {
			delete(c.leases, u.Range)
		} else {
			c.leases[u.Range] = *u.Lease
		}
	}
	if rc.Lease == state.LeaseHeld || rc.Lease == state.LeaseLost {
		code := api.CodeLeaseLost
		if rc.Lease == state.LeaseHeld {
			code = api.CodeLeaseHeld
		}
		return &json2.Error{Code: json2.ErrorCode(code), Message: string(rc.Lease),
			Data: api.LeaseData{Range: rc.Range, Holder: rc.Holder, Token: rc.Token, ExpiresMs: rc.ExpiresMs}}
	}
	*reply = api.LeaseReply{Range: rc.Range, Outcome: string(rc.Lease), Holder: rc.Holder, Token: rc.Token, ExpiresMs: rc.ExpiresMs, Height: 3}
	return nil
}

func (s *service) GetLease(_ *http.Request, args *api.RangeArgs, reply *api.LeaseStateReply) error {
	s.count("getLease")
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	now := uint64(c.leaseClock().UnixMilli())
	*reply = api.LeaseStateReply{Head: api.Head{AcceptedHeight: 3}, Range: args.Range, Fence: c.fences[args.Range], AtMs: now}
	if l, ok := c.leases[args.Range]; ok {
		reply.Holder, reply.Token, reply.ExpiresMs, reply.Held = l.Holder, l.Token, l.ExpiresMs, l.Held(now)
	}
	return nil
}
