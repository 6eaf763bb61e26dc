// Package apitest is the fake S-Chain network for the tests of everything
// that talks to the API: the client, the CLI, tools and the SeaweedFS
// integration. A few nodes share one chain state (ranges and their owners,
// counters, owners' id pools, manifests, receipts), each serving the real
// gorilla/rpc stack with avalanchego's codec as the VM does, so wire
// details (method case, error encoding, data) are real.
//
// Tests shape it:
//   - owners: a range belongs to the node SetOwner gave it, else to node 0,
//     or, after SpreadOwners, to CRC32(range) modulo the nodes that are up
//     (so that a node going down moves its ranges at once; the real chain
//     waits for a liveness round);
//   - faults: a node down (SetDown drops its connections, Close stops it),
//     HTTP 503s (FailHTTP), answers injected per node and method
//     (FailNext), NotReady for the next writes (SetNotReady), slow
//     allocations (SetDelay) and blocks (SetBlockTime), a range's owner
//     changing before its transaction's block (MoveDuringNextAllocate);
//   - finality: off until SetFinalAfter: then an accepted receipt becomes
//     final that long after acceptance, never while SetFinalityStalled
//     holds; waits for it answer CodeTimeout naming the transaction when
//     their bound (SetMaxWait, waitMs) runs out first;
//   - pools: a pooled allocation is cut from its owner's pool of PoolChunk
//     ids, reserved from the range's counter;
//   - leases: decided by the chain's rule (execute.DecideLease) at a clock
//     the test may set (SetLeaseClock);
//   - access: writes need the token RequireToken names (any by default).
//
// It records every allocation it answered (Issued), so that a test can
// check that no id was issued twice (CheckUnique).
//
// Who it is for: the project's tests. It is test harness (tests/framework):
// nothing that ships links it (tests/layout).
package apitest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// NetworkID is the network every fake node reports.
const NetworkID = 1337

// Token is a write token for tests that need one (RequireToken(Token)).
const Token = "apitest-token"

// PoolChunk is how many ids an owner's pool reserves at a time.
const PoolChunk = 1 << 14

// Net is the fake network. Its methods are safe for concurrent use.
type Net struct {
	ChainID api.ID
	Nodes   []*Node // immutable after New

	mu         sync.Mutex
	height     uint64                  // the P-chain height answers carry; guarded by mu
	owners     map[string]int          // guarded by mu; explicit owners
	spread     bool                    // guarded by mu; other ranges by CRC32 over the nodes up
	counters   map[string]uint64       // guarded by mu
	pools      map[poolKey][2]uint64   // guarded by mu; [next, end) of each owner's pool
	manifests  map[string]api.Manifest // guarded by mu
	receipts   map[api.ID]*receipt     // guarded by mu
	txSeq      uint64                  // guarded by mu
	token      string                  // guarded by mu; "" accepts any write
	membership *api.MembershipReply    // guarded by mu; nil: one made from the nodes
	reported   api.ID                  // guarded by mu; the chain getNode reports (ChainID if empty)
	moves      map[string]int          // guarded by mu; range → node its next allocation's owner change moves it to
	issued     []Allocation            // guarded by mu
	notReady   int                     // guarded by mu; the next writes answered NotReady
	delay      time.Duration           // guarded by mu; every allocation takes at least this long
	blockTime  time.Duration           // guarded by mu; a waited write takes this long
	finality   bool                    // guarded by mu; receipts become final
	finalAfter time.Duration           // guarded by mu
	stalled    bool                    // guarded by mu
	maxWait    time.Duration           // guarded by mu; a node's bound of a wait
	padding    int                     // guarded by mu; unrelated entries before a request's in its receipt
	acceptedAt map[api.ID]time.Time    // guarded by mu
	calls      map[string]int          // guarded by mu; by method, every node
	leases     map[string]state.Lease  // guarded by mu
	fences     map[string]uint64       // guarded by mu
	leaseClock func() time.Time        // guarded by mu; the block time leases are decided at
}

type poolKey struct {
	node int
	rng  string
}

// receipt reads "pending" for pendingPolls more reads.
type receipt struct {
	reply        api.ReceiptReply
	pendingPolls int
}

// Allocation is one answered allocation: ids [Base, Base+Count) of Range by
// node Node; Pooled if cut from a pool (whose chunk is an allocation of its
// own).
type Allocation struct {
	Range  string
	Base   uint64
	Count  uint64
	Node   int
	Pooled bool
}

// Node is one fake node.
type Node struct {
	ID  api.NodeID
	URI string
	i   int
	net *Net
	mux *http.ServeMux
	srv *httptest.Server

	mu       sync.Mutex
	inject   map[string][]error // guarded by mu; method → answers to give first
	httpFail int                // guarded by mu; next requests answered 503
	down     bool               // guarded by mu; connections dropped
	calls    map[string]int     // guarded by mu
	auth     []string           // guarded by mu; Authorization headers of writes
	direct   string             // guarded by mu; getNode's directURI
	frozen   *frozenView        // guarded by mu; set while the node lags behind
	notReady string             // guarded by mu; reason reads answer NotReady with
	paused   chan struct{}      // guarded by mu; requests wait while set (closed to resume)
	claimed  uint64             // guarded by mu; a lying node's last accepted height, 0 for the truth
}

// ClaimHeight makes the node's reads name height as their last accepted
// block whatever it accepted (a hostile or broken node); 0 ends it.
func (n *Node) ClaimHeight(height uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.claimed = height
}

// Pause makes the node take requests and answer none until Resume (or the
// request's end): a node whose process is stopped (SIGSTOP) behind a
// listening socket.
func (n *Node) Pause() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused == nil {
		n.paused = make(chan struct{})
	}
}

// Resume answers the paused requests and the next ones.
func (n *Node) Resume() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused != nil {
		close(n.paused)
		n.paused = nil
	}
}

// frozenView is what a node that stopped following the chain answers
// reads from: the chain as it was when it stopped.
type frozenView struct {
	head      api.Head
	counters  map[string]uint64
	manifests map[string]api.Manifest
}

// Freeze makes the node stop following the chain while its API keeps
// answering: reads answer from the counters and the last accepted block of
// now, whatever is accepted later (a paused or partitioned node, or one
// restarted from an old copy of its database). Thaw ends it.
func (n *Node) Freeze() {
	f := n.net
	f.mu.Lock()
	v := &frozenView{head: f.head(), counters: maps.Clone(f.counters), manifests: maps.Clone(f.manifests)}
	f.mu.Unlock()
	n.mu.Lock()
	n.frozen = v
	n.mu.Unlock()
}

// Thaw makes a frozen node follow the chain again.
func (n *Node) Thaw() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.frozen = nil
}

// SetNotReady makes the node's reads answer NotReady with reason (a node
// that knows it lags: "bootstrapping", "behind_peers"); "" ends it.
func (n *Node) SetNotReady(reason string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notReady = reason
}

// view is what a read of the node answers from: its last accepted block
// and counters (the network's, or a frozen node's), refused below
// minHeight or while the node says it is not ready. Callers hold f.mu.
func (n *Node) view(minHeight uint64) (api.Head, map[string]uint64, error) {
	head, counters, _, err := n.state(minHeight)
	return head, counters, err
}

// state is view with the manifests the node answers from. Callers hold
// f.mu.
func (n *Node) state(minHeight uint64) (api.Head, map[string]uint64, map[string]api.Manifest, error) {
	n.mu.Lock()
	v, notReady, claimed := n.frozen, n.notReady, n.claimed
	n.mu.Unlock()
	head, counters, manifests := n.net.head(), n.net.counters, n.net.manifests
	if v != nil {
		head, counters, manifests = v.head, v.counters, v.manifests
	}
	if claimed != 0 {
		head.AcceptedHeight = claimed
	}
	switch {
	case notReady != "":
		return head, nil, nil, RPCError(api.CodeNotReady, "node not ready: "+notReady, api.RetryData{RetryAfterMs: 100, Reason: notReady, AcceptedHeight: head.AcceptedHeight})
	case head.AcceptedHeight < minHeight:
		return head, nil, nil, RPCError(api.CodeNotReady, fmt.Sprintf("below min height %d", minHeight), api.RetryData{RetryAfterMs: 100, Reason: "below_min_height", AcceptedHeight: head.AcceptedHeight})
	}
	return head, counters, manifests, nil
}

// New starts n nodes; they stop when the test ends. Answers carry P-chain
// height 7 until SetOwner moves a range.
func New(t testing.TB, n int) *Net {
	f := &Net{
		ChainID: api.ID(ids.GenerateTestID()), height: 7,
		owners: map[string]int{}, counters: map[string]uint64{}, pools: map[poolKey][2]uint64{},
		manifests: map[string]api.Manifest{}, receipts: map[api.ID]*receipt{}, acceptedAt: map[api.ID]time.Time{},
		calls: map[string]int{}, maxWait: time.Minute,
		leases: map[string]state.Lease{}, fences: map[string]uint64{}, leaseClock: time.Now,
	}
	for i := range n {
		node := &Node{net: f, i: i, ID: api.NodeID(ids.GenerateTestNodeID()), inject: map[string][]error{}, calls: map[string]int{}, mux: http.NewServeMux()}
		server := rpc.NewServer()
		server.RegisterCodec(avajson.NewCodec(), "application/json")
		if err := server.RegisterService(&Service{n: node}, api.Service); err != nil {
			t.Fatalf("apitest: register: %v", err)
		}
		node.mux.Handle("/ext/bc/"+f.ChainID.String(), node.gate(server))
		node.srv = httptest.NewServer(node.mux)
		t.Cleanup(node.srv.Close)
		node.URI = node.srv.URL
		f.Nodes = append(f.Nodes, node)
	}
	return f
}

// URIs are the nodes' base URIs, in node order.
func (f *Net) URIs() []string {
	out := make([]string, len(f.Nodes))
	for i, n := range f.Nodes {
		out[i] = n.URI
	}
	return out
}

// IDs are the nodes' IDs, in node order.
func (f *Net) IDs() []api.NodeID {
	out := make([]api.NodeID, len(f.Nodes))
	for i, n := range f.Nodes {
		out[i] = n.ID
	}
	return out
}

// Height is the P-chain height answers carry now.
func (f *Net) Height() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.height
}

// SetOwner moves rng to node i at a new P-chain height, as a membership
// change would.
func (f *Net) SetOwner(rng string, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.owners[rng] = i
	f.height++
}

// MoveOwner moves rng to node i at the same P-chain height, as the
// liveness membership does when an owner stops answering: a client that
// cached the old owner learns of it only by asking another node.
func (f *Net) MoveOwner(rng string, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.owners[rng] = i
}

// SpreadOwners gives every range SetOwner did not place to CRC32(range)
// modulo the nodes that are up.
func (f *Net) SpreadOwners() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spread = true
}

// Owner is the index of the node owning rng now.
func (f *Net) Owner(rng string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.owner(rng)
}

func (f *Net) owner(rng string) int {
	if o, ok := f.owners[rng]; ok {
		return o
	}
	if !f.spread {
		return 0
	}
	var up []int
	for _, n := range f.Nodes {
		if !n.isDown() {
			up = append(up, n.i)
		}
	}
	if len(up) == 0 {
		return 0
	}
	return up[crc32.ChecksumIEEE([]byte(rng))%uint32(len(up))]
}

// MoveDuringNextAllocate makes the next allocation of rng be rejected as
// if the range's owner changed before its block (the owner's re-pin found
// it no longer owns rng): the transaction reserves nothing, its receipt is
// rejected, and rng moves to node i.
func (f *Net) MoveDuringNextAllocate(rng string, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.moves == nil {
		f.moves = map[string]int{}
	}
	f.moves[rng] = i
}

// AddReceipt makes getReceipt of rc.TxID answer pending for pendingPolls
// reads, then rc.
func (f *Net) AddReceipt(rc api.ReceiptReply, pendingPolls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receipts[rc.TxID] = &receipt{reply: rc, pendingPolls: pendingPolls}
}

// RequireToken makes writes (and waits) without "Authorization: Bearer
// <token>" answer Unauthorized.
func (f *Net) RequireToken(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token = token
}

// ReportChain makes getNode report another chain than the one served at
// the path: a wrong endpoint.
func (f *Net) ReportChain(id api.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reported = id
}

// SetMembership makes getMembership answer m.
func (f *Net) SetMembership(m api.MembershipReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.membership = &m
}

// SetNotReady makes the next n writes (on any node) answer NotReady.
func (f *Net) SetNotReady(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notReady = n
}

// SetDelay makes every allocation, pooled ones included, take d.
func (f *Net) SetDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// SetBlockTime makes every waited write take d (a block's latency).
func (f *Net) SetBlockTime(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blockTime = d
}

// SetFinalAfter turns finality on: an accepted receipt becomes final d
// after its acceptance (certified by its own height).
func (f *Net) SetFinalAfter(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finality, f.finalAfter = true, d
}

// SetFinalityStalled stops (or resumes) finality: no receipt becomes final
// while it holds, as when one of three equal validators is dead.
func (f *Net) SetFinalityStalled(stalled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stalled = stalled
}

// SetMaxWait bounds every wait, as a node's maxWaitMs does (a minute by
// default).
func (f *Net) SetMaxWait(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.maxWait = d
}

// PadEntries puts n unrelated entries before each allocation's own in its
// receipt, as a group commit of other requests would: a client must use
// the reply's index.
func (f *Net) PadEntries(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.padding = n
}

// SetCounter sets a range's counter, as if allocated up to next.
func (f *Net) SetCounter(rng string, next uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counters[rng] = next
}

// Counter is a range's next unissued id.
func (f *Net) Counter(rng string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counters[rng]
}

// Issued returns every allocation answered so far.
func (f *Net) Issued() []Allocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Allocation(nil), f.issued...)
}

// Calls is how many calls of method the nodes served together (Node.Count
// is one node's).
func (f *Net) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// CheckUnique returns an error naming the first id of a range issued twice
// (a pool's chunk is its own allocation, so the pieces cut from it are not
// counted again).
func (f *Net) CheckUnique() error {
	type iv struct{ lo, hi uint64 }
	byRange := map[string][]iv{}
	for _, a := range f.Issued() {
		if a.Pooled {
			continue
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

// head is the network's last accepted block: one block per transaction,
// the block of the n-th at height n+1 (a receipt's Height). Callers hold
// mu.
func (f *Net) head() api.Head {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], f.txSeq)
	return api.Head{AcceptedHeight: f.txSeq + 1, AcceptedID: api.ID(sha256.Sum256(append([]byte("block"), b[:]...)))}
}

// newTxID is a fresh transaction ID; f.mu is held.
func (f *Net) newTxID() api.ID {
	f.txSeq++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], f.txSeq)
	return api.ID(sha256.Sum256(b[:]))
}

// accept records an accepted receipt; f.mu is held.
func (f *Net) accept(rc api.ReceiptReply, after time.Duration) {
	f.receipts[rc.TxID] = &receipt{reply: rc}
	f.acceptedAt[rc.TxID] = time.Now().Add(after)
}

// final marks rc final when a certificate covers it by now; f.mu is held.
func (f *Net) final(rc *api.ReceiptReply) {
	at, ok := f.acceptedAt[rc.TxID]
	if ok && f.finality && rc.Status == api.StatusAccepted && !f.stalled && time.Since(at) >= f.finalAfter {
		rc.Final, rc.CertifiedBy = true, rc.Height
	}
}

// FailNext makes the node answer method's next calls with errs, in order.
func (n *Node) FailNext(method string, errs ...error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inject[method] = append(n.inject[method], errs...)
}

// SetInject replaces method's pending injected answers.
func (n *Node) SetInject(method string, errs ...error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inject[method] = errs
}

// FailHTTP answers the node's next k requests with HTTP 503.
func (n *Node) FailHTTP(k int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.httpFail = k
}

// SetDown drops the node's connections (a killed node) or serves again;
// with SpreadOwners, its ranges move to the nodes up meanwhile.
func (n *Node) SetDown(down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = down
}

func (n *Node) isDown() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.down
}

// SetDirectURI makes getNode announce uri as the node's direct API.
func (n *Node) SetDirectURI(uri string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.direct = uri
}

// Count is how many calls of method the node served.
func (n *Node) Count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[method]
}

// LastAuth is the Authorization header of the node's last write.
func (n *Node) LastAuth() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.auth) == 0 {
		return ""
	}
	return n.auth[len(n.auth)-1]
}

// Close stops the node's server: a dead node, for good.
func (n *Node) Close() { n.srv.Close() }

// Handler is the node's whole HTTP handler, to serve it at a second
// address (a direct API, say).
func (n *Node) Handler() http.Handler { return n.mux }

// Handle serves another handler on the node's server (a fake P-chain API,
// say).
func (n *Node) Handle(path string, h http.Handler) { n.mux.Handle(path, h) }

// take counts a call of method and returns the answer injected for it.
func (n *Node) take(method string) error {
	n.net.mu.Lock()
	n.net.calls[method]++
	n.net.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls[method]++
	q := n.inject[method]
	if len(q) == 0 {
		return nil
	}
	n.inject[method] = q[1:]
	return q[0]
}

// gate drops the connection of a down node (what a killed node looks like)
// and answers the HTTP failures asked for.
func (n *Node) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		down, fail := n.down, n.httpFail > 0
		if fail {
			n.httpFail--
		}
		paused := n.paused
		n.mu.Unlock()
		if paused != nil {
			select {
			case <-paused:
			case <-r.Context().Done():
				return
			}
		}
		if down {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
					return
				}
			}
			fail = true
		}
		if fail {
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RPCError is a JSON-RPC error answer, for FailNext.
func RPCError(code int, msg string, data any) error {
	return &json2.Error{Code: json2.ErrorCode(code), Message: msg, Data: data}
}

// Service is the fake's API, registered under api.Service.
type Service struct{ n *Node }

// authorize refuses a write (or a wait) when the network requires a token
// and the header does not carry it; a write's header is recorded
// (LastAuth).
func (s *Service) authorize(r *http.Request, write bool) error {
	auth := r.Header.Get("Authorization")
	if write {
		s.n.mu.Lock()
		s.n.auth = append(s.n.auth, auth)
		s.n.mu.Unlock()
	}
	f := s.n.net
	f.mu.Lock()
	token := f.token
	f.mu.Unlock()
	switch {
	case token == "":
		return nil
	case auth == "":
		return RPCError(api.CodeUnauthorized, "this method needs a write token", api.UnauthorizedData{Reason: api.ReasonMissing})
	case auth != "Bearer "+token:
		return RPCError(api.CodeUnauthorized, "the write token is not valid", api.UnauthorizedData{Reason: api.ReasonInvalid})
	}
	return nil
}

// admit is what every authorized write passes: the delay, NotReady, and
// the range's owner.
func (s *Service) admit(r *http.Request, rng string) error {
	f := s.n.net
	f.mu.Lock()
	delay := f.delay
	f.mu.Unlock()
	if delay > 0 && !sleep(r, delay) {
		return r.Context().Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notReady > 0 {
		f.notReady--
		return RPCError(api.CodeNotReady, "not ready", api.RetryData{RetryAfterMs: 10})
	}
	if owner := f.owner(rng); owner != s.n.i {
		id := f.Nodes[owner].ID
		return RPCError(api.CodeNotOwner, fmt.Sprintf("range %q is owned by %s at P-chain height %d", rng, id, f.height),
			api.NotOwnerData{Range: rng, Owner: id, PChainHeight: f.height})
	}
	return nil
}

// sleep waits d unless the request ends first.
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

// Allocate reserves ids as the chain would, on the range's owner.
func (s *Service) Allocate(r *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	if err := s.n.take("allocate"); err != nil {
		return err
	}
	if err := s.authorize(r, true); err != nil {
		return err
	}
	if err := txs.VerifyRange(args.Range, txs.DefaultLimits()); err != nil {
		return RPCError(api.CodeInvalidParams, err.Error(), api.RejectedData{Reason: "bad_range"})
	}
	if args.Count == 0 || args.Count > txs.DefaultLimits().MaxCount {
		return RPCError(api.CodeInvalidParams, fmt.Sprintf("count %d not in [1, %d]", args.Count, txs.DefaultLimits().MaxCount), api.RejectedData{Reason: "bad_count"})
	}
	if err := s.admit(r, args.Range); err != nil {
		return err
	}
	if args.Pooled {
		return s.pooled(args, reply)
	}
	f := s.n.net
	f.mu.Lock()
	if to, ok := f.moves[args.Range]; ok {
		defer f.mu.Unlock()
		delete(f.moves, args.Range)
		id := f.newTxID()
		f.owners[args.Range] = to
		f.height++
		rc := api.ReceiptReply{TxID: id, Status: api.StatusRejected,
			Error: fmt.Sprintf("rejected: owner changed: range %q is owned by %s at P-chain height %d", args.Range, f.Nodes[to].ID, f.height)}
		f.receipts[id] = &receipt{reply: rc}
		*reply = api.AllocateReply{TxID: id, PChainHeight: f.height - 1, Owner: s.n.ID}
		if args.Wait.Waits() {
			reply.Receipt = &rc
		}
		return nil
	}
	base := max(f.counters[args.Range], args.Floor)
	f.counters[args.Range] = base + args.Count
	f.issued = append(f.issued, Allocation{Range: args.Range, Base: base, Count: args.Count, Node: s.n.i})
	id := f.newTxID()
	rc := api.ReceiptReply{TxID: id, Status: api.StatusAccepted, Height: f.head().AcceptedHeight}
	for range f.padding {
		rc.Entries = append(rc.Entries, api.ReceiptEntry{Range: "other", Base: 1, Count: 1})
	}
	rc.Entries = append(rc.Entries, api.ReceiptEntry{Range: args.Range, Base: base, Count: args.Count})
	f.accept(rc, f.blockTime)
	*reply = api.AllocateReply{TxID: id, Index: f.padding, PChainHeight: f.height, Owner: s.n.ID}
	f.mu.Unlock()
	if !args.Wait.Waits() {
		return nil
	}
	got, err := s.wait(r, id, args.Wait, args.WaitMs, reply.Index, true)
	reply.Receipt = got
	return err
}

// pooled cuts a pooled allocation from its owner's pool, reserving a chunk
// of the range's counter when the pool runs short.
func (s *Service) pooled(args *api.AllocateArgs, reply *api.AllocateReply) error {
	if args.Floor != 0 {
		return RPCError(api.CodeInvalidParams, "a pooled allocation takes no floor", api.RejectedData{Reason: "invalid_pooled"})
	}
	if args.Count > PoolChunk/4 {
		return RPCError(api.CodeInvalidParams, fmt.Sprintf("a pooled allocation takes 1..%d ids", PoolChunk/4), api.RejectedData{Reason: "invalid_pooled"})
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	k := poolKey{s.n.i, args.Range}
	p := f.pools[k]
	if p[1]-p[0] < args.Count {
		base := f.counters[args.Range]
		f.counters[args.Range] = base + PoolChunk
		f.issued = append(f.issued, Allocation{Range: args.Range, Base: base, Count: PoolChunk, Node: s.n.i})
		p = [2]uint64{base, base + PoolChunk}
	}
	f.pools[k] = [2]uint64{p[0] + args.Count, p[1]}
	f.issued = append(f.issued, Allocation{Range: args.Range, Base: p[0], Count: args.Count, Node: s.n.i, Pooled: true})
	// The reservation is named by its range and end.
	var end [8]byte
	binary.BigEndian.PutUint64(end[:], p[1])
	*reply = api.AllocateReply{TxID: api.ID(sha256.Sum256(append([]byte(args.Range), end[:]...))), Owner: s.n.ID, Pooled: true, Base: p[0], Count: args.Count}
	return nil
}

// AllocateBatch answers each request as Allocate would (counted as
// "allocateBatch", each request also as "allocate").
func (s *Service) AllocateBatch(r *http.Request, args *api.AllocateBatchArgs, reply *api.AllocateBatchReply) error {
	if err := s.n.take("allocateBatch"); err != nil {
		return err
	}
	if len(args.Requests) == 0 || len(args.Requests) > api.MaxBatch {
		return RPCError(api.CodeInvalidParams, "allocateBatch takes 1 to 256 requests", api.RejectedData{Reason: "bad_batch"})
	}
	reply.Results = make([]api.AllocateResult, len(args.Requests))
	for i := range args.Requests {
		rep := new(api.AllocateReply)
		err := s.Allocate(r, &args.Requests[i], rep)
		var je *json2.Error
		switch {
		case err == nil:
			reply.Results[i].Reply = rep
		case errors.As(err, &je):
			reply.Results[i].Error = api.NewError(int(je.Code), je.Message, je.Data)
		default:
			return err
		}
	}
	return nil
}

// PutManifest commits a manifest whose chunks were allocated.
func (s *Service) PutManifest(r *http.Request, args *api.PutManifestArgs, reply *api.PutManifestReply) error {
	if err := s.n.take("putManifest"); err != nil {
		return err
	}
	if err := s.authorize(r, true); err != nil {
		return err
	}
	if err := s.admit(r, args.Bucket); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	for _, c := range args.Chunks {
		if c.ID >= f.counters[c.Range] {
			f.mu.Unlock()
			return RPCError(api.CodeRejected, fmt.Sprintf("chunk %d of %q was never allocated", c.ID, c.Range),
				api.RejectedData{Reason: "unallocated_chunk"})
		}
	}
	f.manifests[args.Bucket+"\x00"+args.Key] = api.Manifest{Bucket: args.Bucket, Key: args.Key, Size: args.Size,
		ContentHash: args.ContentHash, Chunks: args.Chunks, Deleted: args.Deleted}
	id := f.newTxID()
	rc := api.ReceiptReply{TxID: id, Status: api.StatusAccepted, Height: f.head().AcceptedHeight,
		Entries: []api.ReceiptEntry{{Bucket: args.Bucket, Key: args.Key, Deleted: args.Deleted}}}
	f.accept(rc, f.blockTime)
	*reply = api.PutManifestReply{TxID: id, PChainHeight: f.height, Owner: s.n.ID}
	f.mu.Unlock()
	if !args.Wait.Waits() {
		return nil
	}
	got, err := s.wait(r, id, args.Wait, args.WaitMs, 0, true)
	reply.Receipt = got
	if err == nil && got.Status == api.StatusAccepted && args.ThenGet != "" {
		f.mu.Lock()
		defer f.mu.Unlock()
		head, _, manifests, serr := s.n.state(0)
		if serr != nil {
			return nil // a write answers without its read then, as a node does
		}
		reply.Then = &api.ThenReply{Key: args.ThenGet}
		if m, ok := manifests[args.Bucket+"\x00"+args.ThenGet]; ok {
			reply.Then.Manifest = &api.ManifestReply{Head: head, Manifest: m}
		}
	}
	return err
}

// read is a receipt as getReceipt answers it now (pending for its
// remaining reads); f.mu is held.
func (f *Net) read(txID api.ID) api.ReceiptReply {
	rc, ok := f.receipts[txID]
	switch {
	case !ok:
		return api.ReceiptReply{TxID: txID, Status: api.StatusUnknown}
	case rc.pendingPolls > 0:
		rc.pendingPolls--
		return api.ReceiptReply{TxID: txID, Status: api.StatusPending}
	}
	out := rc.reply
	if at, ok := f.acceptedAt[txID]; ok && time.Now().Before(at) {
		return api.ReceiptReply{TxID: txID, Status: api.StatusPending} // its block is not decided yet
	}
	f.final(&out)
	return out
}

// wait answers txID's receipt once it is decided (and final with
// api.WaitFinal), or CodeTimeout naming the transaction when
// min(waitMs, SetMaxWait) runs out first. A waitReceipt of an unknown
// transaction is answered at once, as a node does; a write's own wait
// (write) is never unknown, its node just signed it.
func (s *Service) wait(r *http.Request, txID api.ID, until api.Wait, waitMs uint64, index int, write bool) (*api.ReceiptReply, error) {
	f := s.n.net
	f.mu.Lock()
	bound := f.maxWait
	f.mu.Unlock()
	if waitMs > 0 {
		bound = min(bound, time.Duration(waitMs)*time.Millisecond)
	}
	deadline := time.Now().Add(bound)
	for {
		f.mu.Lock()
		rc := f.read(txID)
		f.mu.Unlock()
		decided := rc.Status == api.StatusAccepted || rc.Status == api.StatusRejected
		if decided && (until != api.WaitFinal || rc.Status != api.StatusAccepted || rc.Final) {
			return &rc, nil
		}
		if rc.Status == api.StatusUnknown && !write {
			return &rc, nil // another node's, as far as this one knows: asked elsewhere
		}
		if time.Now().After(deadline) || !sleep(r, 2*time.Millisecond) {
			return nil, RPCError(api.CodeTimeout, fmt.Sprintf("transaction %s is %s after %v; poll getReceipt, do not resend", txID, rc.Status, bound),
				api.TimeoutData{TxID: txID, Index: index, WaitMs: uint64(bound / time.Millisecond)})
		}
	}
}

// GetReceipt answers a receipt (pending for its remaining reads).
func (s *Service) GetReceipt(_ *http.Request, args *api.TxIDArgs, reply *api.ReceiptReply) error {
	if err := s.n.take("getReceipt"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	head, _, err := s.n.view(args.MinHeight)
	if err != nil {
		return err
	}
	*reply = f.read(args.TxID)
	s.n.mu.Lock()
	frozen := s.n.frozen != nil
	s.n.mu.Unlock()
	if frozen && reply.Height >= head.AcceptedHeight {
		*reply = api.ReceiptReply{TxID: args.TxID, Status: api.StatusUnknown}
	}
	reply.Head = head
	return nil
}

// WaitReceipt answers once the transaction is decided (or final), as a
// node does for a write token.
func (s *Service) WaitReceipt(r *http.Request, args *api.WaitReceiptArgs, reply *api.ReceiptReply) error {
	if err := s.n.take("waitReceipt"); err != nil {
		return err
	}
	if err := s.authorize(r, false); err != nil {
		return err
	}
	until := args.Wait
	if until == api.WaitNone {
		until = api.WaitAccepted
	}
	rc, err := s.wait(r, args.TxID, until, args.WaitMs, 0, false)
	if err != nil {
		return err
	}
	*reply = *rc
	return nil
}

// GetAllocation answers a range's counter.
func (s *Service) GetAllocation(_ *http.Request, args *api.RangeArgs, reply *api.AllocationReply) error {
	if err := s.n.take("getAllocation"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	head, counters, err := s.n.view(args.MinHeight)
	if err != nil {
		return err
	}
	*reply = api.AllocationReply{Head: head, Range: args.Range, Next: counters[args.Range]}
	return nil
}

// GetManifest answers a committed manifest.
func (s *Service) GetManifest(_ *http.Request, args *api.ManifestArgs, reply *api.ManifestReply) error {
	if err := s.n.take("getManifest"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	head, _, manifests, err := s.n.state(args.MinHeight)
	if err != nil {
		return err
	}
	m, ok := manifests[args.Bucket+"\x00"+args.Key]
	if !ok {
		return RPCError(api.CodeNotFound, "not found", nil)
	}
	reply.Head, reply.Manifest = head, m
	return nil
}

// GetOwner names a range's owner.
func (s *Service) GetOwner(_ *http.Request, args *api.RangeArgs, reply *api.OwnerReply) error {
	if err := s.n.take("getOwner"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	*reply = api.OwnerReply{Range: args.Range, Owner: f.Nodes[f.owner(args.Range)].ID, PChainHeight: f.height}
	return nil
}

// GetMembership answers the set membership, or every node a member and a
// validator with weight 1.
func (s *Service) GetMembership(_ *http.Request, args *api.ReadArgs, reply *api.MembershipReply) error {
	if err := s.n.take("getMembership"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	head, _, err := s.n.view(args.MinHeight)
	if err != nil {
		return err
	}
	if f.membership != nil {
		*reply = *f.membership
		reply.Head = head
		return nil
	}
	*reply = api.MembershipReply{Head: head, PChainHeight: f.height, NodeID: s.n.ID}
	for _, n := range f.Nodes {
		reply.Members = append(reply.Members, api.Member{NodeID: n.ID, Weight: 1})
		reply.Validators = append(reply.Validators, api.ValidatorLiveness{NodeID: n.ID, Weight: 1, Member: true})
	}
	return nil
}

// GetNode identifies the node.
func (s *Service) GetNode(_ *http.Request, _ *api.ReadArgs, reply *api.NodeReply) error {
	if err := s.n.take("getNode"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	chainID := f.ChainID
	if f.reported != (api.ID{}) {
		chainID = f.reported
	}
	head, _, err := s.n.view(0)
	*reply = api.NodeReply{Head: head, NodeID: s.n.ID, NetworkID: NetworkID, ChainID: chainID, Height: head.AcceptedHeight}
	s.n.mu.Lock()
	if err != nil {
		reply.NotReady = s.n.notReady
	}
	reply.DirectURI = s.n.direct
	s.n.mu.Unlock()
	return nil
}

// SetLeaseClock sets the block time leases are decided at (the real clock
// by default), so that a test moves it past a TTL without waiting.
func (f *Net) SetLeaseClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaseClock = now
}

// Lease is the lease of rng and whether it holds at the lease clock's now.
func (f *Net) Lease(rng string) (state.Lease, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.leases[rng]
	return l, ok && l.Held(uint64(f.leaseClock().UnixMilli()))
}

// AcquireLease decides an acquire at the range's owner.
func (s *Service) AcquireLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseAcquire, args, reply)
}

// RenewLease decides a renewal at the range's owner.
func (s *Service) RenewLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseRenew, args, reply)
}

// ReleaseLease decides a release at the range's owner.
func (s *Service) ReleaseLease(r *http.Request, args *api.LeaseArgs, reply *api.LeaseReply) error {
	return s.lease(r, txs.LeaseRelease, args, reply)
}

// lease decides one lease operation by the chain's rule at the lease
// clock, at the range's owner, as the block that carries it would.
func (s *Service) lease(r *http.Request, op txs.LeaseOp, args *api.LeaseArgs, reply *api.LeaseReply) error {
	if err := s.n.take(op.String() + "Lease"); err != nil {
		return err
	}
	if err := s.authorize(r, true); err != nil {
		return err
	}
	en := txs.LeaseEntry{Op: op, Range: args.Range, Holder: args.Holder, Token: args.Token, TTLMs: args.TTLMs}
	if err := en.Verify(txs.DefaultLimits()); err != nil {
		return RPCError(api.CodeInvalidParams, err.Error(), api.RejectedData{Reason: "bad_lease"})
	}
	if err := s.admit(r, args.Range); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.leases[args.Range]
	rc, u, err := execute.DecideLease(en, cur, ok, f.fences[args.Range], uint64(f.leaseClock().UnixMilli()))
	if err != nil {
		return RPCError(api.CodeRejected, err.Error(), api.RejectedData{Reason: "lease"})
	}
	if u != nil {
		if u.Fence != 0 {
			f.fences[u.Range] = u.Fence
		}
		if u.Lease == nil {
			delete(f.leases, u.Range)
		} else {
			f.leases[u.Range] = *u.Lease
		}
	}
	id := f.newTxID()
	if rc.Lease == state.LeaseHeld || rc.Lease == state.LeaseLost {
		code := api.CodeLeaseLost
		if rc.Lease == state.LeaseHeld {
			code = api.CodeLeaseHeld
		}
		return RPCError(code, string(rc.Lease), api.LeaseData{Range: rc.Range, Holder: rc.Holder, Token: rc.Token, ExpiresMs: rc.ExpiresMs, TxID: id})
	}
	*reply = api.LeaseReply{TxID: id, Height: f.head().AcceptedHeight, Range: rc.Range, Outcome: string(rc.Lease), Holder: rc.Holder, Token: rc.Token, ExpiresMs: rc.ExpiresMs}
	return nil
}

// GetLease answers a range's lease at the lease clock.
func (s *Service) GetLease(_ *http.Request, args *api.RangeArgs, reply *api.LeaseStateReply) error {
	if err := s.n.take("getLease"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	now := uint64(f.leaseClock().UnixMilli())
	*reply = api.LeaseStateReply{Head: f.head(), Range: args.Range, Fence: f.fences[args.Range], AtMs: now}
	if l, ok := f.leases[args.Range]; ok {
		reply.Holder, reply.Token, reply.ExpiresMs, reply.Held = l.Holder, l.Token, l.ExpiresMs, l.Held(now)
	}
	return nil
}
