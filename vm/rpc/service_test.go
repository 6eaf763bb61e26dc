package rpc_test

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
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/certifier"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
	"github.com/s-chain/schain/vm/rpc"
	"github.com/s-chain/schain/vm/writer"
)

var (
	chainID = ids.ID{'r', 'p', 'c'}
	nodeID  = ids.NodeID{'n'}
	owner   = ids.NodeID{'o'}
)

// writes is a write path whose answers a test sets.
type writes struct {
	mu       sync.Mutex
	sub      writer.Submitted
	err      error
	pooled   writer.Pooled
	receipts map[ids.ID]*api.ReceiptReply
	// hold makes WaitReceipt wait until its context ends.
	hold bool
}

func (w *writes) AllocateOne(context.Context, txs.AllocateEntry) (writer.Submitted, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sub, w.err
}

func (w *writes) AllocatePooled(_ context.Context, _ string, count uint64) (writer.Pooled, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pooled
	p.Count = count
	return p, w.err
}

func (w *writes) PoolHolds(string, uint64) bool { return true }
func (w *writes) PutManifest(context.Context, txs.Manifest) (*txs.Tx, error) {
	return nil, writer.ErrShuttingDown
}
func (w *writes) WriteManifest(context.Context, txs.ManifestEntry) (writer.Submitted, error) {
	return writer.Submitted{}, writer.ErrShuttingDown
}
func (w *writes) Reclaim(context.Context, []txs.ChunkRef) (*txs.Tx, error) {
	return nil, writer.ErrShuttingDown
}
func (w *writes) ManifestsActive() error                                        { return nil }
func (w *writes) LeaseAsked() uint64                                            { return 0 }
func (w *writes) LeaseAnswer(uint64, string, state.Lease, ids.ID, uint64) error { return nil }
func (w *writes) Lease(context.Context, txs.LeaseEntry) (*txs.Tx, error) {
	return nil, writer.ErrShuttingDown
}

func (w *writes) Receipt(id ids.ID) (*api.ReceiptReply, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rc, ok := w.receipts[id]; ok {
		out := *rc
		return &out, nil
	}
	return &api.ReceiptReply{TxID: api.ID(id), Status: api.StatusPending}, nil
}

func (w *writes) WaitReceipt(ctx context.Context, id ids.ID) (*api.ReceiptReply, error) {
	w.mu.Lock()
	hold := w.hold
	w.mu.Unlock()
	if hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return w.Receipt(id)
}

// reads is accepted state at height 9 with one counter.
type reads struct {
	last *chain.Block
}

type counters struct{ state.Reader }

func (counters) Counter(rangeKey string) (uint64, error) {
	if rangeKey == "photos" {
		return 42, nil
	}
	return 0, nil
}

func (r *reads) Snapshot(context.Context) (*execute.Membership, error) { return nil, chain.ErrNotReady }
func (r *reads) ValidatorSet(context.Context, uint64) (*execute.ValidatorSet, error) {
	return nil, chain.ErrNotReady
}
func (r *reads) State() state.Reader                     { return counters{} }
func (r *reads) LastAccepted() *chain.Block              { return r.last }
func (r *reads) AcceptedAt(uint64) (*block.Block, error) { return nil, chain.ErrNoBlock }
func (r *reads) ListObjects(state.ObjectQuery) (*state.ObjectPage, error) {
	return nil, chain.ErrNotReady
}
func (r *reads) ListReleased(state.ReleasedQuery) (*state.ReleasedPage, error) {
	return nil, chain.ErrNotReady
}

// finality certifies every height up to certified.
type finality struct{ certified uint64 }

func (f finality) Covering(h uint64) (*certificate.Certificate, error) {
	if h > f.certified {
		return nil, certifier.ErrNotFinal
	}
	return &certificate.Certificate{Statement: certificate.Statement{NetworkID: 5, ChainID: chainID, Height: f.certified}, Signers: []byte{1}}, nil
}

func (f finality) WaitFinal(ctx context.Context, h uint64) error {
	if h <= f.certified {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f finality) PeersHeight() (uint64, bool) { return 0, false }

// serve runs the API over w in front of a client.
func serve(t *testing.T, w *writes) (*rpc.Server, *client.Client) {
	g := config.DefaultGenesis()
	last, err := block.New(ids.ID{'p'}, 9, 1000, true, 10, ids.ID{'r'}, nil, block.DefaultLimits())
	require.NoError(t, err)
	srv, err := rpc.New(rpc.Config{NodeID: nodeID, NetworkID: 5, ChainID: chainID, Genesis: &g},
		&reads{last: &chain.Block{Block: last}}, w, finality{certified: 5})
	require.NoError(t, err)
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	cfg := client.DefaultConfig()
	cfg.Timeout = 5 * time.Second
	c, err := client.New(h.URL, chainID.String(), cfg)
	require.NoError(t, err)
	return srv, c
}

// rawCall posts one JSON-RPC request and returns its error object (nil:
// a result).
func rawCall(t *testing.T, endpoint, method string, params any) *api.Error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": api.Service + "." + method, "params": params, "id": 1})
	require.NoError(t, err)
	resp, err := http.Post(endpoint, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Error *api.Error `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Error
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestAllocateAnswersItsSubmission: the reply names the transaction, the
// entry and the membership it was signed against; with a wait, its receipt.
func TestAllocateAnswersItsSubmission(t *testing.T) {
	require := require.New(t)
	txID := ids.ID{'t', 'x'}
	w := &writes{
		sub:      writer.Submitted{TxID: txID, Index: 3, PChainHeight: 10, Owner: nodeID},
		receipts: map[ids.ID]*api.ReceiptReply{txID: {TxID: api.ID(txID), Status: api.StatusAccepted, Height: 4, Entries: []api.ReceiptEntry{{}, {}, {}, {Range: "r", Base: 7, Count: 2}}}},
	}
	_, c := serve(t, w)
	rep, err := c.Allocate(ctx(t), api.AllocateArgs{Range: "r", Count: 2})
	require.NoError(err)
	require.Equal(api.ID(txID), rep.TxID)
	require.Equal(3, rep.Index)
	require.Equal(uint64(10), rep.PChainHeight)
	require.Equal(api.NodeID(nodeID), rep.Owner)

	rep, err = c.Allocate(ctx(t), api.AllocateArgs{Range: "r", Count: 2, Wait: api.WaitFinal})
	require.NoError(err)
	require.NotNil(rep.Receipt)
	require.Equal(uint64(7), rep.Receipt.Entries[3].Base)
	require.True(rep.Receipt.Final, "certified up to 5")
	require.Equal(uint64(5), rep.Receipt.CertifiedBy)
	require.Equal(uint64(5), rep.Receipt.Certificate.Height)
}

// TestWaitTimesOutNamingTheTransaction: a wait that runs out answers
// Timeout with the transaction and entry to poll, never silently.
func TestWaitTimesOutNamingTheTransaction(t *testing.T) {
	require := require.New(t)
	txID := ids.ID{'s', 'l', 'o', 'w'}
	_, c := serve(t, &writes{sub: writer.Submitted{TxID: txID, Index: 1, Owner: nodeID}, hold: true})
	_, err := c.Allocate(ctx(t), api.AllocateArgs{Range: "r", Count: 1, Wait: api.WaitAccepted, WaitMs: 20})
	require.ErrorIs(err, client.ErrTimeout)
	e, ok := client.AsError(err)
	require.True(ok)
	var d api.TimeoutData
	require.True(e.DataOf(api.CodeTimeout, &d))
	require.Equal(api.TimeoutData{TxID: api.ID(txID), Index: 1, WaitMs: 20}, d)
}

// TestErrorsAnswerTheirIdentity: each refusal answers its code, reason and
// data: the owner to route to, how long to back off, the rule broken.
func TestErrorsAnswerTheirIdentity(t *testing.T) {
	require := require.New(t)
	w := &writes{err: &execute.NotOwnerError{Range: "r", Signer: nodeID, Owner: owner, PChainHeight: 11}}
	_, c := serve(t, w)
	_, err := c.Allocate(ctx(t), api.AllocateArgs{Range: "r", Count: 1})
	hint, ok := client.IsNotOwner(err)
	require.True(ok, "%v", err)
	require.Equal(api.NodeID(owner), hint.Owner)
	require.Equal(uint64(11), hint.PChainHeight)

	w.mu.Lock()
	w.err = mempool.ErrFull
	w.mu.Unlock()
	_, err = c.Allocate(ctx(t), api.AllocateArgs{Range: "r", Count: 1})
	retry, ok := client.IsMempoolFull(err)
	require.True(ok, "%v", err)
	require.Equal(uint64(200), retry.RetryAfterMs)

	_, err = c.Allocate(ctx(t), api.AllocateArgs{Range: "bad range!", Count: 1})
	require.ErrorIs(err, client.ErrInvalidParams)
	_, err = c.Allocate(ctx(t), api.AllocateArgs{Range: "r", Count: 0})
	require.ErrorIs(err, client.ErrInvalidParams)
	_, err = c.Allocate(ctx(t), api.AllocateArgs{Range: "r", Count: 1, Pooled: true, Floor: 3})
	require.ErrorIs(err, client.ErrInvalidParams, "a pooled allocation takes no floor")
}

// TestBatchAnswersEachRequestAsAlone: a batch's results are, index for
// index, what each request alone would have answered.
func TestBatchAnswersEachRequestAsAlone(t *testing.T) {
	require := require.New(t)
	w := &writes{pooled: writer.Pooled{Base: 100, TxID: ids.ID{'p'}}}
	_, c := serve(t, w)
	results, err := c.AllocateBatch(ctx(t), []api.AllocateArgs{
		{Range: "a", Count: 2, Pooled: true},
		{Range: "bad range!", Count: 1, Pooled: true},
		{Range: "b", Count: 3, Pooled: true},
	})
	require.NoError(err)
	require.Len(results, 3)
	require.Equal(uint64(100), results[0].Reply.Base)
	require.Equal(uint64(2), results[0].Reply.Count)
	require.Nil(results[1].Reply)
	require.Equal(api.CodeInvalidParams, results[1].Error.Code)
	require.Equal(uint64(3), results[2].Reply.Count)

	_, err = c.AllocateBatch(ctx(t), nil)
	require.ErrorIs(err, client.ErrInvalidParams, "an empty batch")
}

// TestReadsRefuseStateTheyCannotVouchFor: while bootstrapping, or below the
// height a read asks for, reads answer NotReady with the reason, never
// older state; otherwise the state and the head it came from.
func TestReadsRefuseStateTheyCannotVouchFor(t *testing.T) {
	require := require.New(t)
	srv, c := serve(t, &writes{})
	got, err := c.GetAllocation(ctx(t), "photos")
	require.NoError(err)
	require.Equal(uint64(42), got.Next)
	require.Equal(uint64(9), got.AcceptedHeight)

	srv.SetBootstrapping(true)
	_, err = c.GetAllocation(ctx(t), "photos")
	require.ErrorIs(err, client.ErrNotReady)
	e, _ := client.AsError(err)
	var d api.RetryData
	require.True(e.DataOf(api.CodeNotReady, &d))
	require.Equal("bootstrapping", d.Reason)
	srv.SetBootstrapping(false)

	e = rawCall(t, c.Endpoint(), "getAllocation", api.RangeArgs{Range: "photos", AtLeast: api.AtLeast{MinHeight: 10}})
	require.True(e.DataOf(api.CodeNotReady, &d), "%v", e)
	require.Equal("below_min_height", d.Reason)
	require.Equal(uint64(9), d.AcceptedHeight)
	require.Nil(rawCall(t, c.Endpoint(), "getAllocation", api.RangeArgs{Range: "photos", AtLeast: api.AtLeast{MinHeight: 9}}))
}
