// Package apitest is a fake S-Chain network for tests of API clients (the
// client, the CLI, tools): a few nodes sharing one chain state (ranges and
// their owners, counters, manifests, receipts), each serving the real
// gorilla/rpc stack with avalanchego's codec as the VM does, so wire
// details (method case, error encoding, data) are real. Tests shape it:
// owners per range, receipts that stay pending for a few polls, answers
// injected per method, HTTP failures, a write token, extra services on a
// node's server (a fake P-chain, say).
package apitest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/api"
)

// NetworkID is the network every fake node reports.
const NetworkID = 1337

// Net is the fake network. Ranges not given an owner belong to node 0.
type Net struct {
	ChainID ids.ID
	Nodes   []*Node // immutable after New

	mu         sync.Mutex
	height     uint64                  // the P-chain height answers carry; guarded by mu
	owners     map[string]ids.NodeID   // guarded by mu
	counters   map[string]uint64       // guarded by mu
	manifests  map[string]txs.Manifest // guarded by mu
	receipts   map[ids.ID]*receipt     // guarded by mu
	txSeq      uint64                  // guarded by mu
	token      string                  // guarded by mu; "" accepts any write
	membership *api.MembershipReply    // guarded by mu; nil: one made from the nodes
	reported   ids.ID                  // guarded by mu; the chain getNode reports (ChainID if empty)
	moves      map[string]int          // guarded by mu; range → node its next allocation's owner change moves it to
}

// receipt reads "pending" for pendingPolls more polls.
type receipt struct {
	reply        api.ReceiptReply
	pendingPolls int
}

// Node is one fake node.
type Node struct {
	ID  ids.NodeID
	URI string
	net *Net
	mux *http.ServeMux
	srv *httptest.Server

	mu       sync.Mutex
	inject   map[string][]error // guarded by mu; method → answers to give first
	httpFail int                // guarded by mu; next requests answered 503
	calls    map[string]int     // guarded by mu
	auth     []string           // guarded by mu; Authorization headers of writes
	direct   string             // guarded by mu; getNode's directURI
	frozen   *frozenView        // guarded by mu; set while the node lags behind
	notReady string             // guarded by mu; reason reads answer NotReady with
	paused   chan struct{}      // guarded by mu; requests wait while set (closed to resume)
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
	head     api.Head
	counters map[string]uint64
}

// Freeze makes the node stop following the chain while its API keeps
// answering: reads answer from the counters and the last accepted block of
// now, whatever is accepted later (a paused or partitioned node, or one
// restarted from an old copy of its database). Thaw ends it.
func (n *Node) Freeze() {
	f := n.net
	f.mu.Lock()
	v := &frozenView{head: f.head(), counters: make(map[string]uint64, len(f.counters))}
	for k, c := range f.counters {
		v.counters[k] = c
	}
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
	n.mu.Lock()
	v, notReady := n.frozen, n.notReady
	n.mu.Unlock()
	head, counters := n.net.head(), n.net.counters
	if v != nil {
		head, counters = v.head, v.counters
	}
	switch {
	case notReady != "":
		return head, nil, RPCError(api.CodeNotReady, "node not ready: "+notReady, api.RetryData{RetryAfterMs: 100, Reason: notReady, AcceptedHeight: head.AcceptedHeight})
	case head.AcceptedHeight < minHeight:
		return head, nil, RPCError(api.CodeNotReady, fmt.Sprintf("below min height %d", minHeight), api.RetryData{RetryAfterMs: 100, Reason: "below_min_height", AcceptedHeight: head.AcceptedHeight})
	}
	return head, counters, nil
}

// SetDirectURI makes getNode announce uri as the node's direct API.
func (n *Node) SetDirectURI(uri string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.direct = uri
}

// New starts n nodes; they stop when the test ends. Answers carry P-chain
// height 7 until SetOwner moves a range.
func New(t testing.TB, n int) *Net {
	f := &Net{
		ChainID: ids.GenerateTestID(), height: 7,
		owners: map[string]ids.NodeID{}, counters: map[string]uint64{},
		manifests: map[string]txs.Manifest{}, receipts: map[ids.ID]*receipt{},
	}
	for range n {
		node := &Node{net: f, ID: ids.GenerateTestNodeID(), inject: map[string][]error{}, calls: map[string]int{}, mux: http.NewServeMux()}
		server := rpc.NewServer()
		server.RegisterCodec(avajson.NewCodec(), "application/json")
		if err := server.RegisterService(&Service{n: node}, api.Service); err != nil {
			t.Fatalf("apitest: register: %v", err)
		}
		node.mux.Handle("/ext/bc/"+f.ChainID.String(), node.middleware(server))
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
func (f *Net) IDs() []ids.NodeID {
	out := make([]ids.NodeID, len(f.Nodes))
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
	f.owners[rng] = f.Nodes[i].ID
	f.height++
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

// OwnerOf names rng's owner.
func (f *Net) OwnerOf(rng string) ids.NodeID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ownerOf(rng)
}

func (f *Net) ownerOf(rng string) ids.NodeID {
	if o, ok := f.owners[rng]; ok {
		return o
	}
	return f.Nodes[0].ID
}

// AddReceipt makes getReceipt of rc.TxID answer pending for pendingPolls
// polls, then rc.
func (f *Net) AddReceipt(rc api.ReceiptReply, pendingPolls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receipts[rc.TxID] = &receipt{reply: rc, pendingPolls: pendingPolls}
}

// RequireToken makes writes without "Authorization: Bearer <token>"
// answer Unauthorized.
func (f *Net) RequireToken(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token = token
}

// ReportChain makes getNode report another chain than the one served at
// the path: a wrong endpoint.
func (f *Net) ReportChain(id ids.ID) {
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

// head is the network's last accepted block: one block per transaction.
// Callers hold mu.
func (f *Net) head() api.Head {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], f.txSeq)
	return api.Head{AcceptedHeight: f.txSeq + 1, AcceptedID: ids.ID(sha256.Sum256(append([]byte("block"), b[:]...)))}
}

func (f *Net) newTxID() ids.ID {
	f.txSeq++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], f.txSeq)
	return ids.ID(sha256.Sum256(b[:]))
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

// Close stops the node's server: a dead node.
func (n *Node) Close() { n.srv.Close() }

// Handler is the node's whole HTTP handler, to serve it at a second
// address (a direct API, say).
func (n *Node) Handler() http.Handler { return n.mux }

// Handle serves another handler on the node's server (a fake P-chain API,
// say).
func (n *Node) Handle(path string, h http.Handler) { n.mux.Handle(path, h) }

func (n *Node) take(method string) error {
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

func (n *Node) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		fail := n.httpFail > 0
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

// authorize records a write's Authorization header and refuses it when
// the network requires a token and the header does not carry it.
func (s *Service) authorize(r *http.Request) error {
	auth := r.Header.Get("Authorization")
	s.n.mu.Lock()
	s.n.auth = append(s.n.auth, auth)
	s.n.mu.Unlock()
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

// Allocate reserves ids as the chain would, on the range's owner.
func (s *Service) Allocate(r *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	if err := s.n.take("allocate"); err != nil {
		return err
	}
	if err := s.authorize(r); err != nil {
		return err
	}
	if err := txs.VerifyRange(args.Range, txs.DefaultLimits()); err != nil {
		return RPCError(api.CodeInvalidParams, err.Error(), api.RejectedData{Reason: "bad_range"})
	}
	if args.Count == 0 {
		return RPCError(api.CodeInvalidParams, "count must be positive", api.RejectedData{Reason: "zero_count"})
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkOwner(s.n, args.Range); err != nil {
		return err
	}
	if to, ok := f.moves[args.Range]; ok {
		delete(f.moves, args.Range)
		id := f.newTxID()
		f.owners[args.Range] = f.Nodes[to].ID
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
	id := f.newTxID()
	rc := api.ReceiptReply{TxID: id, Status: api.StatusAccepted, Height: f.txSeq,
		Entries: []state.ReceiptEntry{{Range: args.Range, Base: base, Count: args.Count}}}
	f.receipts[id] = &receipt{reply: rc}
	*reply = api.AllocateReply{TxID: id, PChainHeight: f.height, Owner: s.n.ID}
	if args.Wait.Waits() {
		reply.Receipt = &rc
	}
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
			reply.Results[i].Error = &api.BatchError{Code: int(je.Code), Message: je.Message, Data: je.Data}
		default:
			return err
		}
	}
	return nil
}

func (f *Net) checkOwner(n *Node, rng string) error {
	if owner := f.ownerOf(rng); owner != n.ID {
		return RPCError(api.CodeNotOwner, fmt.Sprintf("range %q is owned by %s at P-chain height %d", rng, owner, f.height),
			api.NotOwnerData{Range: rng, Owner: owner, PChainHeight: f.height})
	}
	return nil
}

// PutManifest commits a manifest whose chunks were allocated.
func (s *Service) PutManifest(r *http.Request, args *api.PutManifestArgs, reply *api.PutManifestReply) error {
	if err := s.n.take("putManifest"); err != nil {
		return err
	}
	if err := s.authorize(r); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkOwner(s.n, args.Bucket); err != nil {
		return err
	}
	for _, c := range args.Chunks {
		if c.ID >= f.counters[c.Range] {
			return RPCError(api.CodeRejected, fmt.Sprintf("chunk %d of %q was never allocated", c.ID, c.Range),
				api.RejectedData{Reason: "unallocated_chunk"})
		}
	}
	f.manifests[args.Bucket+"\x00"+args.Key] = txs.Manifest{Bucket: args.Bucket, Key: args.Key, Size: args.Size,
		ContentHash: args.ContentHash, Chunks: args.Chunks, Deleted: args.Deleted}
	id := f.newTxID()
	rc := api.ReceiptReply{TxID: id, Status: api.StatusAccepted, Height: f.txSeq,
		Entries: []state.ReceiptEntry{{Bucket: args.Bucket, Key: args.Key, Deleted: args.Deleted}}}
	f.receipts[id] = &receipt{reply: rc}
	*reply = api.PutManifestReply{TxID: id, PChainHeight: f.height, Owner: s.n.ID}
	if args.Wait.Waits() {
		reply.Receipt = &rc
	}
	return nil
}

// GetReceipt answers a receipt (pending for its remaining polls).
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
	rc, ok := f.receipts[args.TxID]
	s.n.mu.Lock()
	frozen := s.n.frozen != nil
	s.n.mu.Unlock()
	switch {
	case !ok || frozen && rc.reply.Height >= head.AcceptedHeight:
		*reply = api.ReceiptReply{TxID: args.TxID, Status: api.StatusUnknown}
	case rc.pendingPolls > 0:
		rc.pendingPolls--
		*reply = api.ReceiptReply{TxID: args.TxID, Status: api.StatusPending}
	default:
		*reply = rc.reply
	}
	reply.Head = head
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
	m, ok := f.manifests[args.Bucket+"\x00"+args.Key]
	if !ok {
		return RPCError(api.CodeNotFound, "not found", nil)
	}
	reply.Manifest = m
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
	*reply = api.OwnerReply{Range: args.Range, Owner: f.ownerOf(args.Range), PChainHeight: f.height, Fingerprint: ids.Empty}
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
	if f.reported != ids.Empty {
		chainID = f.reported
	}
	head, _, err := s.n.view(0)
	*reply = api.NodeReply{Head: head, NodeID: s.n.ID, NetworkID: NetworkID, ChainID: chainID, Height: head.AcceptedHeight}
	if err != nil {
		s.n.mu.Lock()
		reply.NotReady = s.n.notReady
		s.n.mu.Unlock()
	}
	s.n.mu.Lock()
	reply.DirectURI = s.n.direct
	s.n.mu.Unlock()
	return nil
}
