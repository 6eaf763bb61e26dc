package client_test

import (
	"crypto/sha256"
	"encoding/binary"
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

// fakeNet is a few fake nodes sharing one chain state: a map of ranges to
// owners (unlisted ranges belong to the first node), counters, manifests and
// receipts. Nodes serve the real gorilla/rpc stack with avalanchego's codec,
// as the VM does, so wire details (method case, error encoding) are real.
type fakeNet struct {
	chainID ids.ID

	mu        sync.Mutex
	epoch     uint64                  // guarded by mu
	owners    map[string]ids.NodeID   // guarded by mu
	counters  map[string]uint64       // guarded by mu
	manifests map[string]txs.Manifest // guarded by mu
	receipts  map[ids.ID]*fakeReceipt // guarded by mu
	nodes     []*fakeNode             // immutable after newFakeNet
	txSeq     uint64                  // guarded by mu
}

// fakeReceipt is a receipt that reads "pending" for pendingPolls more polls.
type fakeReceipt struct {
	reply        api.ReceiptReply
	pendingPolls int
}

type fakeNode struct {
	net *fakeNet
	id  ids.NodeID
	srv *httptest.Server

	mu       sync.Mutex
	inject   map[string][]error // guarded by mu; method → answers to give first
	httpFail int                // guarded by mu; next requests answered 503
	calls    map[string]int     // guarded by mu
}

func newFakeNet(t *testing.T, n int) *fakeNet {
	f := &fakeNet{
		chainID:   ids.GenerateTestID(),
		epoch:     7,
		owners:    map[string]ids.NodeID{},
		counters:  map[string]uint64{},
		manifests: map[string]txs.Manifest{},
		receipts:  map[ids.ID]*fakeReceipt{},
	}
	for range n {
		node := &fakeNode{net: f, id: ids.GenerateTestNodeID(), inject: map[string][]error{}, calls: map[string]int{}}
		server := rpc.NewServer()
		server.RegisterCodec(avajson.NewCodec(), "application/json")
		if err := server.RegisterService(&fakeService{n: node}, api.Service); err != nil {
			t.Fatalf("register: %v", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/ext/bc/"+f.chainID.String(), node.middleware(server))
		node.srv = httptest.NewServer(mux)
		t.Cleanup(node.srv.Close)
		f.nodes = append(f.nodes, node)
	}
	return f
}

func (f *fakeNet) uris() []string {
	out := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		out[i] = n.srv.URL
	}
	return out
}

// setOwner moves rng to node i in a new epoch, as an epoch change would.
func (f *fakeNet) setOwner(rng string, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.owners[rng] = f.nodes[i].id
	f.epoch++
}

func (f *fakeNet) ownerOf(rng string) ids.NodeID {
	if o, ok := f.owners[rng]; ok {
		return o
	}
	return f.nodes[0].id
}

func (f *fakeNet) addReceipt(rc api.ReceiptReply, pendingPolls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.receipts[rc.TxID] = &fakeReceipt{reply: rc, pendingPolls: pendingPolls}
}

func (f *fakeNet) newTxID() ids.ID {
	f.txSeq++
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], f.txSeq)
	return ids.ID(sha256.Sum256(b[:]))
}

// failNext makes the node answer method's next calls with errs, in order.
func (n *fakeNode) failNext(method string, errs ...error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inject[method] = append(n.inject[method], errs...)
}

// setInject replaces method's pending injected answers.
func (n *fakeNode) setInject(method string, errs ...error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inject[method] = errs
}

func (n *fakeNode) count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[method]
}

func (n *fakeNode) take(method string) error {
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

func (n *fakeNode) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		fail := n.httpFail > 0
		if fail {
			n.httpFail--
		}
		n.mu.Unlock()
		if fail {
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func rpcErr(code int, msg string, data any) error {
	return &json2.Error{Code: json2.ErrorCode(code), Message: msg, Data: data}
}

type fakeService struct{ n *fakeNode }

func (s *fakeService) Allocate(_ *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	if err := s.n.take("allocate"); err != nil {
		return err
	}
	if args.Range == "" || args.Count == 0 {
		return rpcErr(api.CodeInvalidParams, "count must be positive", nil)
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkOwner(s.n, args.Range); err != nil {
		return err
	}
	base := max(f.counters[args.Range], args.Floor)
	f.counters[args.Range] = base + args.Count
	id := f.newTxID()
	rc := api.ReceiptReply{TxID: id, Status: api.StatusAccepted, Height: f.txSeq,
		Entries: []state.ReceiptEntry{{Range: args.Range, Base: base, Count: args.Count}}}
	f.receipts[id] = &fakeReceipt{reply: rc}
	*reply = api.AllocateReply{TxID: id, PChainHeight: f.epoch, Owner: s.n.id}
	if args.Wait {
		reply.Receipt = &rc
	}
	return nil
}

func (f *fakeNet) checkOwner(n *fakeNode, rng string) error {
	if owner := f.ownerOf(rng); owner != n.id {
		return rpcErr(api.CodeNotOwner, fmt.Sprintf("range %q is owned by %s", rng, owner),
			api.NotOwnerData{Range: rng, Owner: owner, PChainHeight: f.epoch})
	}
	return nil
}

func (s *fakeService) PutManifest(_ *http.Request, args *api.PutManifestArgs, reply *api.PutManifestReply) error {
	if err := s.n.take("putManifest"); err != nil {
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
			return rpcErr(api.CodeRejected, fmt.Sprintf("chunk %d of %q was never allocated", c.ID, c.Range),
				api.RejectedData{Reason: "unallocated_chunk"})
		}
	}
	f.manifests[args.Bucket+"\x00"+args.Key] = txs.Manifest{Bucket: args.Bucket, Key: args.Key, Size: args.Size,
		ContentHash: args.ContentHash, Chunks: args.Chunks, Deleted: args.Deleted}
	id := f.newTxID()
	rc := api.ReceiptReply{TxID: id, Status: api.StatusAccepted, Height: f.txSeq,
		Entries: []state.ReceiptEntry{{Bucket: args.Bucket, Key: args.Key, Deleted: args.Deleted}}}
	f.receipts[id] = &fakeReceipt{reply: rc}
	*reply = api.PutManifestReply{TxID: id, PChainHeight: f.epoch, Owner: s.n.id}
	if args.Wait {
		reply.Receipt = &rc
	}
	return nil
}

func (s *fakeService) GetReceipt(_ *http.Request, args *api.TxIDArgs, reply *api.ReceiptReply) error {
	if err := s.n.take("getReceipt"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	rc, ok := f.receipts[args.TxID]
	switch {
	case !ok:
		*reply = api.ReceiptReply{TxID: args.TxID, Status: api.StatusUnknown}
	case rc.pendingPolls > 0:
		rc.pendingPolls--
		*reply = api.ReceiptReply{TxID: args.TxID, Status: api.StatusPending}
	default:
		*reply = rc.reply
	}
	return nil
}

func (s *fakeService) GetAllocation(_ *http.Request, args *api.RangeArgs, reply *api.AllocationReply) error {
	if err := s.n.take("getAllocation"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	*reply = api.AllocationReply{Range: args.Range, Next: f.counters[args.Range]}
	return nil
}

func (s *fakeService) GetManifest(_ *http.Request, args *api.ManifestArgs, reply *api.ManifestReply) error {
	if err := s.n.take("getManifest"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.manifests[args.Bucket+"\x00"+args.Key]
	if !ok {
		return rpcErr(api.CodeInvalidParams, "not found", nil)
	}
	reply.Manifest = m
	return nil
}

func (s *fakeService) GetOwner(_ *http.Request, args *api.RangeArgs, reply *api.OwnerReply) error {
	if err := s.n.take("getOwner"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	*reply = api.OwnerReply{Range: args.Range, Owner: f.ownerOf(args.Range), PChainHeight: f.epoch, Fingerprint: ids.Empty}
	return nil
}

func (s *fakeService) GetMembership(_ *http.Request, _ *api.Empty, reply *api.MembershipReply) error {
	if err := s.n.take("getMembership"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	*reply = api.MembershipReply{PChainHeight: f.epoch, NodeID: s.n.id}
	for _, n := range f.nodes {
		reply.Members = append(reply.Members, api.Member{NodeID: n.id, Weight: 1})
	}
	return nil
}

func (s *fakeService) GetNode(_ *http.Request, _ *api.Empty, reply *api.NodeReply) error {
	if err := s.n.take("getNode"); err != nil {
		return err
	}
	f := s.n.net
	f.mu.Lock()
	defer f.mu.Unlock()
	*reply = api.NodeReply{NodeID: s.n.id, NetworkID: 1337, ChainID: f.chainID, Height: f.txSeq}
	return nil
}
