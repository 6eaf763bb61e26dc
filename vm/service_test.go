package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/writer"
)

// round makes proposer build a block of epoch on the last accepted block and
// has every VM verify and accept it.
func (nw *net) round(proposer int, epoch uint64) (*chain.Block, error) {
	ctx := context.Background()
	last, err := nw.vms[proposer].LastAccepted(ctx)
	require.NoError(nw.t, err)
	for _, v := range nw.vms {
		require.NoError(nw.t, v.SetPreferenceWithContext(ctx, last, &snowblock.Context{PChainHeight: epoch}))
	}
	// A proposer builds nothing while a change of members settles.
	require.NoError(nw.t, nw.vms[proposer].Builder().Settled(ctx))
	b, err := nw.vms[proposer].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: epoch})
	if err != nil {
		return nil, err
	}
	acceptAll(nw.t, nw.deliver(b, epoch))
	nw.prefer(b.ID())
	return b.(*chain.Block), nil
}

// prefer points every VM at id, as the engine does after a decision.
func (nw *net) prefer(id ids.ID) {
	for _, v := range nw.vms {
		require.NoError(nw.t, v.SetPreference(context.Background(), id))
	}
}

// ready builds the chain's opening blocks: the context-less first block and
// an empty block that opens epoch, accepted everywhere.
func (nw *net) ready(epoch uint64) {
	ctx := context.Background()
	_, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: "opening", Count: 1}})
	require.ErrorIs(nw.t, err, chain.ErrNotReady, "a request before the first membership asks for the opening blocks")
	b1, err := nw.vms[0].BuildBlock(ctx)
	require.NoError(nw.t, err)
	require.Empty(nw.t, b1.(*chain.Block).Txs)
	acceptAll(nw.t, nw.deliver(b1, 0))
	nw.prefer(b1.ID())
	opening, err := nw.round(0, epoch)
	require.NoError(nw.t, err)
	require.Empty(nw.t, opening.Txs)
	for i, v := range nw.vms {
		e, ok := v.Chain().NewestHeight()
		require.True(nw.t, ok, "vm %d learned the epoch", i)
		require.Equal(nw.t, epoch, e)
	}
}

// rangeOf finds a range owned by node i in the VMs' current epoch.
func (nw *net) rangeOf(i int, salt string) string {
	for k := 0; ; k++ {
		r := salt + "-" + string(rune('a'+k%26)) + string(rune('a'+k/26%26))
		var reply api.OwnerReply
		require.Nil(nw.t, rpcCall(nw.t, nw.server(0), "getOwner", api.RangeArgs{Range: r}, &reply))
		if ids.NodeID(reply.Owner) == nw.keys[i].NodeID {
			return r
		}
	}
}

var servers sync.Map

func (nw *net) server(i int) string {
	key := nw.vms[i]
	if u, ok := servers.Load(key); ok {
		return u.(string)
	}
	h, err := nw.vms[i].Handler()
	require.NoError(nw.t, err)
	srv := httptest.NewServer(h)
	nw.t.Cleanup(srv.Close)
	servers.Store(key, srv.URL)
	return srv.URL
}

type rpcErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rpcCall performs one JSON-RPC 2.0 call; it returns the error object, if
// any.
func rpcCall(t testing.TB, url, method string, params, result any) *rpcErr {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "schain." + method, "params": params})
	require.NoError(t, err)
	return rawCall(t, url, body, result)
}

func rawCall(t testing.TB, url string, body []byte, result any) *rpcErr {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	if out.Error != nil {
		return out.Error
	}
	if result != nil {
		require.NoError(t, json.Unmarshal(out.Result, result))
	}
	return nil
}

func TestJSONRPC(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 3)
	url0 := nw.server(0)

	e := rpcCall(t, url0, "allocate", api.AllocateArgs{Range: "r", Count: 1}, nil)
	require.NotNil(e)
	require.Equal(api.CodeNotReady, e.Code, "before any epoch")

	nw.ready(10)
	mine, theirs := nw.rangeOf(0, "jr"), nw.rangeOf(1, "jr")

	// Wrong owner: NotOwner with the routing hint.
	e = rpcCall(t, url0, "allocate", api.AllocateArgs{Range: theirs, Count: 1}, nil)
	require.NotNil(e)
	require.Equal(api.CodeNotOwner, e.Code)
	var hint api.NotOwnerData
	require.NoError(json.Unmarshal(e.Data, &hint))
	require.Equal(api.NodeID(nw.keys[1].NodeID), hint.Owner)
	require.Equal(uint64(10), hint.PChainHeight)

	// Invalid params: bad range, zero count, huge count, wrong types,
	// unknown method, malformed JSON.
	for name, params := range map[string]any{
		"empty range": api.AllocateArgs{Range: "", Count: 1},
		"zero count":  api.AllocateArgs{Range: mine, Count: 0},
		"huge count":  api.AllocateArgs{Range: mine, Count: 1 << 62},
		"wrong types": map[string]any{"range": 7, "count": "many"},
	} {
		e := rpcCall(t, url0, "allocate", params, nil)
		require.NotNil(e, name)
		require.Contains([]int{api.CodeInvalidParams}, e.Code, name)
	}
	require.NotNil(rpcCall(t, url0, "noSuchMethod", api.Empty{}, nil))
	require.NotNil(rawCall(t, url0, []byte(`{"jsonrpc":"2.0","id":1,"method":"schain.allocate","params":{`), nil))

	// A valid allocate, then the first context-less block and a real one.
	var first api.AllocateReply
	require.Nil(rpcCall(t, url0, "allocate", api.AllocateArgs{Range: mine, Count: 4, Floor: 100}, &first))
	require.Equal(api.NodeID(nw.keys[0].NodeID), first.Owner)
	var rc api.ReceiptReply
	require.Nil(rpcCall(t, url0, "getReceipt", api.TxIDArgs{TxID: first.TxID}, &rc))
	require.Equal(api.StatusPending, rc.Status)
	tx, ok := nw.vms[0].Mempool().Get(ids.ID(first.TxID))
	require.True(ok)
	nw.gossip(0, tx)
	_, err := nw.round(2, 10)
	require.NoError(err)

	for i := range nw.vms {
		url := nw.server(i)
		require.Nil(rpcCall(t, url, "getReceipt", api.TxIDArgs{TxID: first.TxID}, &rc))
		require.Equal(api.StatusAccepted, rc.Status)
		require.Equal([]string{mine}, []string{rc.Entries[0].Range})
		require.Equal(uint64(100), rc.Entries[0].Base)
		var alloc api.AllocationReply
		require.Nil(rpcCall(t, url, "getAllocation", api.RangeArgs{Range: mine}, &alloc))
		require.Equal(uint64(104), alloc.Next)
		var node api.NodeReply
		require.Nil(rpcCall(t, url, "getNode", api.Empty{}, &node))
		require.Equal(api.NodeID(nw.keys[i].NodeID), node.NodeID)
		var ep api.MembershipReply
		require.Nil(rpcCall(t, url, "getMembership", api.Empty{}, &ep))
		require.Equal(uint64(10), ep.PChainHeight)
		require.Len(ep.Members, 3)
	}
	require.Nil(rpcCall(t, url0, "getReceipt", api.TxIDArgs{TxID: api.ID{'?'}}, &rc))
	require.Equal(api.StatusUnknown, rc.Status)

	// Manifests: one on allocated ids is readable from every node; one on an
	// unallocated id is rejected by name.
	obj := api.PutManifestArgs{Bucket: mine, Key: "k/1", Size: 5, ContentHash: api.ID{7}, Chunks: []api.Chunk{{Range: mine, ID: 101, Size: 5}}}
	var put api.PutManifestReply
	require.Nil(rpcCall(t, url0, "putManifest", obj, &put))
	bad := obj
	bad.Key, bad.Chunks = "k/2", []api.Chunk{{Range: mine, ID: 104, Size: 5}}
	var badPut api.PutManifestReply
	require.Nil(rpcCall(t, url0, "putManifest", bad, &badPut))
	_, err = nw.round(0, 10)
	require.NoError(err)
	for i := range nw.vms {
		var m api.ManifestReply
		require.Nil(rpcCall(t, nw.server(i), "getManifest", api.ManifestArgs{Bucket: mine, Key: "k/1"}, &m))
		require.Equal(uint64(101), m.Manifest.Chunks[0].ID)
		e := rpcCall(t, nw.server(i), "getManifest", api.ManifestArgs{Bucket: mine, Key: "k/2"}, nil)
		require.NotNil(e)
		require.Equal(api.CodeNotFound, e.Code)
	}
	require.Nil(rpcCall(t, url0, "getReceipt", api.TxIDArgs{TxID: badPut.TxID}, &rc))
	require.Equal(api.StatusAccepted, rc.Status, "a versioned write refuses the entry, not the transaction")
	require.Equal("unallocated_chunk", rc.Entries[badPut.Index].Refused)
	require.Contains(rc.Entries[badPut.Index].Detail, "next unissued id is 104")

	// Wait returns the receipt once accepted.
	done := make(chan api.AllocateReply, 1)
	go func() {
		var r api.AllocateReply
		if e := rpcCall(t, url0, "allocate", api.AllocateArgs{Range: mine, Count: 1, Wait: api.WaitAccepted}, &r); e == nil {
			done <- r
		}
		close(done)
	}()
	require.Eventually(func() bool { return nw.vms[0].Mempool().Len() == 1 }, 10*time.Second, 5*time.Millisecond)
	_, err = nw.round(0, 10)
	require.NoError(err)
	waited, ok := <-done
	require.True(ok, "wait call failed")
	require.NotNil(waited.Receipt)
	require.Equal(api.StatusAccepted, waited.Receipt.Status)
	require.Equal(uint64(104), waited.Receipt.Entries[0].Base)
}

func TestGroupCommit(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 3)
	nw.ready(10)
	r := nw.rangeOf(0, "gc")
	const callers = 40
	var wg sync.WaitGroup
	subs := make([]writer.Submitted, callers)
	errs := make([]error, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			subs[i], errs[i] = nw.vms[0].Writer().AllocateOne(context.Background(), txs.AllocateEntry{Range: r, Count: 1})
		}(i)
	}
	wg.Wait()
	txIDs := map[ids.ID]map[int]bool{}
	for i := range subs {
		require.NoError(errs[i])
		if txIDs[subs[i].TxID] == nil {
			txIDs[subs[i].TxID] = map[int]bool{}
		}
		require.False(txIDs[subs[i].TxID][subs[i].Index], "two callers share one entry")
		txIDs[subs[i].TxID][subs[i].Index] = true
	}
	require.Less(len(txIDs), callers, "concurrent calls were batched under fewer signatures")
	require.Equal(len(txIDs), nw.vms[0].Mempool().Len())
}

// TestGroupCommitWaitsForReturningClients: callers answered at an accept
// are expected back. Their next requests, arriving further apart than the
// window, are signed as one transaction, and the group closes once the
// last of them is back, not at groupCommitReturnMs. Clients that do not
// come back delay groups for two accepts at most; then a lone request
// waits the window only.
func TestGroupCommitWaitsForReturningClients(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNetWith(t, 3, []byte(`{"timestamp": 1000, "mempool": {"maxTxs": 16, "maxBytes": 1048576}, "groupCommitWindowMs": 2, "groupCommitReturnMs": 1000}`))
	nw.ready(10)
	w := nw.vms[0].Writer()
	r := nw.rangeOf(0, "rc")
	closed := func(reason string) float64 {
		v, _ := series(t, nw.regs[0], "group_commits_total", map[string]string{"closed": reason})
		return v
	}
	// request sends one allocation of r and hands its submission to out.
	request := func(out chan<- writer.Submitted) {
		go func() {
			sub, err := w.AllocateOne(ctx, txs.AllocateEntry{Range: r, Count: 1})
			assert.NoError(t, err)
			out <- sub
		}()
	}

	// Six clients, each with a request waited for until accepted.
	const clients = 6
	first := make(chan writer.Submitted, clients)
	for range clients {
		request(first)
	}
	answered := make(chan error, clients)
	for range clients {
		sub := <-first
		go func() {
			_, err := w.WaitReceipt(ctx, sub.TxID)
			answered <- err
		}()
	}
	require.Eventually(func() bool { return gathered(t, nw.regs[0], "receipt_waits") == clients }, 10*time.Second, time.Millisecond,
		"every client waits before the accept answers it")
	_, err := nw.round(0, 10)
	require.NoError(err)
	for range clients {
		require.NoError(<-answered)
	}
	require.Zero(nw.vms[0].Mempool().Len())

	// They come back 20 ms apart, ten times the window: one group.
	before := closed("returned")
	next := make(chan writer.Submitted, clients)
	for range clients {
		request(next)
		time.Sleep(20 * time.Millisecond) // the spacing under test, not a wait for a condition
	}
	tx := (<-next).TxID
	for range clients - 1 {
		require.Equal(tx, (<-next).TxID, "the returning clients' requests share one transaction")
	}
	require.Equal(before+1, closed("returned"), "closed when the last was back, not at the bound")
	require.Equal(1, nw.vms[0].Mempool().Len())

	// Until the next accept they are expected, and the accept after it
	// still remembers them: a request on its own waits for them up to the
	// bound.
	_, err = nw.round(0, 10)
	require.NoError(err)
	_, err = w.AllocateOne(ctx, txs.AllocateEntry{Range: r, Count: 1})
	require.NoError(err)
	require.Equal(1.0, closed("bound"))

	// One more accept without them: nobody is expected, and a lone
	// request waits the window only. Asking about decided transactions
	// does not count as a client answered.
	_, err = nw.round(0, 10)
	require.NoError(err)
	for range clients {
		rc, err := w.WaitReceipt(ctx, tx)
		require.NoError(err)
		require.Equal(api.StatusAccepted, rc.Status)
	}
	window := closed("window")
	_, err = w.AllocateOne(ctx, txs.AllocateEntry{Range: r, Count: 1})
	require.NoError(err)
	require.Equal(window+1, closed("window"))
	require.Equal(1.0, closed("bound"))
}

func TestRepinOnEpochChange(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNet(t, 3)
	// Epoch 30 drops node 0: its ranges move to others.
	nw.sets[30] = map[ids.NodeID]*validators.GetValidatorOutput{}
	for k, v := range nw.sets[10] {
		if k != nw.keys[0].NodeID {
			nw.sets[30][k] = v
		}
	}
	nw.ready(10)
	kept := nw.rangeOf(0, "rp")

	// Node 0 pins an allocation to epoch 10 and keeps it to itself; the
	// chain moves to epoch 20 first.
	old, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: kept, Count: 2}})
	require.NoError(err)
	adv, err := nw.round(0, 20)
	require.NoError(err)
	require.Empty(adv.Txs, "an epoch-opening block for the stale intent")

	// Node 0 re-signed it for epoch 20; the old ID points at the new one.
	var rc *api.ReceiptReply
	require.Eventually(func() bool {
		rc, err = nw.vms[0].Writer().Receipt(old.ID())
		return err == nil && rc.ReplacedBy != nil
	}, 10*time.Second, 5*time.Millisecond)
	fresh, ok := nw.vms[0].Mempool().Get(ids.ID(*rc.ReplacedBy))
	require.True(ok)
	require.Equal(uint64(20), fresh.Unsigned.Head().PChainHeight)
	require.False(nw.vms[0].Mempool().Has(old.ID()))
	_, err = nw.round(0, 20)
	require.NoError(err)
	final, err := nw.vms[0].Writer().WaitReceipt(ctx, old.ID())
	require.NoError(err)
	require.Equal(api.StatusAccepted, final.Status)
	for _, v := range nw.vms {
		require.Equal(uint64(2), counter(t, v, kept), "applied once, not twice")
	}

	// At epoch 30 node 0 owns nothing: its stale intent is rejected with
	// the new owner named.
	lost, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: kept, Count: 1}})
	require.NoError(err)
	nw.gossip(0, lost)
	_, err = nw.round(1, 30)
	require.NoError(err)
	require.Eventually(func() bool {
		rc, err = nw.vms[0].Writer().Receipt(lost.ID())
		return err == nil && rc.Status == api.StatusRejected
	}, 10*time.Second, 5*time.Millisecond)
	require.Contains(rc.Error, "owner changed")
	for _, v := range nw.vms {
		require.Equal(uint64(2), counter(t, v, kept))
		require.False(v.Mempool().Has(lost.ID()))
	}
	_, err = nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: kept, Count: 1}})
	var noe *execute.NotOwnerError
	require.ErrorAs(err, &noe, "no fallback writer: node 0 is not a member any more")
	require.NotEqual(nw.keys[0].NodeID, noe.Owner)
}
