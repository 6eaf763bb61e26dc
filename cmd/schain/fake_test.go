package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/gorilla/rpc/v2"
	"github.com/gorilla/rpc/v2/json2"
	"github.com/stretchr/testify/require"

	avajson "github.com/ava-labs/avalanchego/utils/json"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/vm/api"
)

// fakeChain is the part of the API the command tests need, served by n nodes
// through the same gorilla/rpc stack as the VM. Ranges in owners belong to
// that node; all others to node 0.
type fakeChain struct {
	chainID ids.ID
	ids     []ids.NodeID
	uris    []string

	mu       sync.Mutex
	owners   map[string]int              // guarded by mu
	counters map[string]uint64           // guarded by mu
	receipts map[ids.ID]api.ReceiptReply // guarded by mu
}

func newFakeChain(t *testing.T, n int, owners map[string]int) *fakeChain {
	f := &fakeChain{chainID: ids.GenerateTestID(), owners: owners, counters: map[string]uint64{}, receipts: map[ids.ID]api.ReceiptReply{}}
	for i := range n {
		f.ids = append(f.ids, ids.GenerateTestNodeID())
		server := rpc.NewServer()
		server.RegisterCodec(avajson.NewCodec(), "application/json")
		require.NoError(t, server.RegisterService(&fakeService{f: f, i: i}, api.Service))
		mux := http.NewServeMux()
		mux.Handle("/ext/bc/"+f.chainID.String(), server)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		f.uris = append(f.uris, srv.URL)
	}
	return f
}

type fakeService struct {
	f *fakeChain
	i int
}

func (s *fakeService) GetNode(_ *http.Request, _ *api.Empty, reply *api.NodeReply) error {
	*reply = api.NodeReply{NodeID: s.f.ids[s.i], NetworkID: 1337, ChainID: s.f.chainID}
	return nil
}

func (s *fakeService) GetOwner(_ *http.Request, args *api.RangeArgs, reply *api.OwnerReply) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	*reply = api.OwnerReply{Range: args.Range, Owner: s.f.ids[s.f.owners[args.Range]], PChainHeight: 12}
	return nil
}

func (s *fakeService) Allocate(_ *http.Request, args *api.AllocateArgs, reply *api.AllocateReply) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if args.Range == "bad range" {
		return &json2.Error{Code: json2.ErrorCode(api.CodeInvalidParams), Message: "range has a space"}
	}
	if owner := s.f.owners[args.Range]; owner != s.i {
		return &json2.Error{Code: json2.ErrorCode(api.CodeNotOwner), Message: fmt.Sprintf("not the owner of %q", args.Range),
			Data: api.NotOwnerData{Range: args.Range, Owner: s.f.ids[owner], PChainHeight: 12}}
	}
	base := max(s.f.counters[args.Range], args.Floor)
	s.f.counters[args.Range] = base + args.Count
	txID := ids.GenerateTestID()
	s.f.receipts[txID] = api.ReceiptReply{TxID: txID, Status: api.StatusAccepted, Height: 3,
		Entries: []state.ReceiptEntry{{Range: args.Range, Base: base, Count: args.Count}}}
	*reply = api.AllocateReply{TxID: txID, PChainHeight: 12, Owner: s.f.ids[s.i]}
	return nil
}

func (s *fakeService) GetReceipt(_ *http.Request, args *api.TxIDArgs, reply *api.ReceiptReply) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	rc, ok := s.f.receipts[args.TxID]
	if !ok {
		rc = api.ReceiptReply{TxID: args.TxID, Status: api.StatusUnknown}
	}
	*reply = rc
	return nil
}
