package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, uri string, chainID string) *client.Client {
	c, err := client.New(uri, chainID, client.DefaultConfig())
	require.NoError(t, err)
	return c
}

func TestClientMethods(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 1)
	c := newClient(t, f.Nodes[0].URI+"/", f.ChainID.String())
	require.Equal(f.Nodes[0].URI+"/ext/bc/"+f.ChainID.String(), c.Endpoint())

	node, err := c.GetNode(ctx)
	require.NoError(err)
	require.Equal(f.Nodes[0].ID, node.NodeID)
	require.Equal(f.ChainID, node.ChainID)

	epoch, err := c.GetMembership(ctx)
	require.NoError(err)
	require.Equal(uint64(7), epoch.PChainHeight)
	require.Len(epoch.Members, 1)

	owner, err := c.GetOwner(ctx, "photos")
	require.NoError(err)
	require.Equal(f.Nodes[0].ID, owner.Owner)
	require.Equal(uint64(7), owner.PChainHeight)

	alloc, err := c.Allocate(ctx, api.AllocateArgs{Range: "photos", Count: 10, Floor: 100, Wait: api.WaitAccepted})
	require.NoError(err)
	require.Equal(f.Nodes[0].ID, alloc.Owner)
	require.NotNil(alloc.Receipt)
	require.Equal(uint64(100), alloc.Receipt.Entries[0].Base)

	next, err := c.GetAllocation(ctx, "photos")
	require.NoError(err)
	require.Equal(uint64(110), next.Next)

	rc, err := c.GetReceipt(ctx, alloc.TxID)
	require.NoError(err)
	require.Equal(api.StatusAccepted, rc.Status)

	chunk := api.Chunk{Range: "photos", ID: 105, Size: 3, Hash: api.ID(ids.GenerateTestID())}
	put, err := c.PutManifest(ctx, api.PutManifestArgs{Bucket: "photos", Key: "a.jpg", Size: 3, ContentHash: chunk.Hash, Chunks: []api.Chunk{chunk}})
	require.NoError(err)
	require.Nil(put.Receipt)

	m, err := c.GetManifest(ctx, "photos", "a.jpg")
	require.NoError(err)
	require.Equal([]api.Chunk{chunk}, m.Manifest.Chunks)

	waited, err := c.WaitForReceipt(ctx, put.TxID)
	require.NoError(err)
	require.Equal(put.TxID, waited.TxID)
}

// TestClientErrorCodes checks that every code of the contract comes back as
// an *Error that matches its sentinel and decodes its data.
func TestClientErrorCodes(t *testing.T) {
	f := apitest.New(t, 2)
	f.SetOwner("elsewhere", 1)
	c := newClient(t, f.Nodes[0].URI, f.ChainID.String())
	tests := []struct {
		name   string
		inject error
		want   error
		check  func(*require.Assertions, error)
	}{
		{name: "not owner", want: client.ErrNotOwner, check: func(r *require.Assertions, err error) {
			d, ok := client.IsNotOwner(err)
			r.True(ok)
			r.Equal(api.NotOwnerData{Range: "elsewhere", Owner: f.Nodes[1].ID, PChainHeight: 8}, d)
		}},
		{name: "not ready", inject: apitest.RPCError(api.CodeNotReady, "no epoch", nil), want: client.ErrNotReady, check: func(r *require.Assertions, err error) {
			r.True(client.IsNotReady(err))
		}},
		{name: "mempool full", inject: apitest.RPCError(api.CodeMempoolFull, "full", api.RetryData{RetryAfterMs: 250}), want: client.ErrMempoolFull, check: func(r *require.Assertions, err error) {
			d, ok := client.IsMempoolFull(err)
			r.True(ok)
			r.Equal(uint64(250), d.RetryAfterMs)
		}},
		{name: "rejected", inject: apitest.RPCError(api.CodeRejected, "no", api.RejectedData{Reason: "unallocated_chunk"}), want: client.ErrRejected, check: func(r *require.Assertions, err error) {
			d, ok := client.IsRejected(err)
			r.True(ok)
			r.Equal("unallocated_chunk", d.Reason)
		}},
		{name: "invalid params", inject: apitest.RPCError(api.CodeInvalidParams, "count", nil), want: client.ErrInvalidParams, check: func(r *require.Assertions, err error) {
			e, ok := client.AsError(err)
			r.True(ok)
			r.Nil(e.Data) // JSON null is no data
		}},
		{name: "timeout", inject: apitest.RPCError(api.CodeTimeout, "wait ran out", nil), want: client.ErrTimeout},
		{name: "unknown", inject: errors.New("disk on fire"), want: client.ErrServer, check: func(r *require.Assertions, err error) {
			e, _ := client.AsError(err)
			r.Equal(api.CodeUnknown, e.Code)
			r.Equal("unknown (-32000): disk on fire", e.Error())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := require.New(t)
			rng := "photos"
			if tt.inject != nil {
				f.Nodes[0].FailNext("allocate", tt.inject)
			} else {
				rng = "elsewhere"
			}
			_, err := c.Allocate(testCtx(t), api.AllocateArgs{Range: rng, Count: 1})
			r.ErrorIs(err, tt.want)
			for _, other := range []error{client.ErrNotOwner, client.ErrNotReady, client.ErrMempoolFull, client.ErrRejected, client.ErrInvalidParams, client.ErrTimeout, client.ErrServer} {
				if other != tt.want {
					r.NotErrorIs(err, other)
				}
			}
			if tt.check != nil {
				tt.check(r, err)
			}
		})
	}
}

// TestClientBadAnswers checks that answers that are not our JSON-RPC response
// give clear, classified errors.
func TestClientBadAnswers(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    error
		message string
	}{
		{name: "not json", status: 200, body: "<html>hello</html>", want: client.ErrMalformedResponse, message: "not JSON"},
		{name: "truncated", status: 200, body: `{"jsonrpc":"2.0","result":{"nodeID":`, want: client.ErrMalformedResponse, message: "not JSON"},
		{name: "wrong version", status: 200, body: `{"jsonrpc":"1.0","result":{},"id":1}`, want: client.ErrMalformedResponse, message: "jsonrpc version"},
		{name: "wrong id", status: 200, body: `{"jsonrpc":"2.0","result":{},"id":99}`, want: client.ErrMalformedResponse, message: "answer id 99"},
		{name: "no result", status: 200, body: `{"jsonrpc":"2.0","id":1}`, want: client.ErrMalformedResponse, message: "neither result nor error"},
		{name: "bad result", status: 200, body: `{"jsonrpc":"2.0","result":{"nodeID":42},"id":1}`, want: client.ErrMalformedResponse, message: "result:"},
		{name: "too large", status: 200, body: `{"jsonrpc":"2.0","result":"` + strings.Repeat("x", 2048) + `"}`, want: client.ErrResponseTooLarge, message: "more than 1024 bytes"},
		{name: "404", status: 404, body: "404 page not found", want: client.ErrTransport, message: "HTTP 404"},
		{name: "503", status: 503, body: "", want: client.ErrTransport, message: "(empty body)"},
		{name: "error with 400", status: 400, body: `{"jsonrpc":"2.0","error":{"code":-32602,"message":"bad","data":null},"id":1}`, want: client.ErrInvalidParams, message: "invalid_params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := require.New(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			cfg := client.DefaultConfig()
			cfg.MaxResponseBytes = 1024
			c, err := client.New(srv.URL, "chain", cfg)
			r.NoError(err)
			_, err = c.GetNode(testCtx(t))
			r.ErrorIs(err, tt.want)
			r.ErrorContains(err, tt.message)
			if !errors.Is(err, client.ErrInvalidParams) {
				r.ErrorContains(err, "schain.getNode at "+srv.URL)
			}
		})
	}
}

func TestClientTransportAndContext(t *testing.T) {
	r := require.New(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	uri := srv.URL
	srv.Close()
	c := newClient(t, uri, "chain")
	_, err := c.GetMembership(testCtx(t))
	r.ErrorIs(err, client.ErrTransport)

	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(block) })
	cfg := client.DefaultConfig()
	cfg.Timeout = 50 * time.Millisecond
	c, err = client.New(slow.URL, "chain", cfg)
	r.NoError(err)
	_, err = c.GetMembership(testCtx(t))
	r.ErrorIs(err, client.ErrTransport, "a per-request timeout is a transport failure: another try may work")

	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err = c.GetMembership(ctx)
	r.ErrorIs(err, context.Canceled)
	r.NotErrorIs(err, client.ErrTransport, "the caller's own cancellation is not retryable")
}

func TestNewValidates(t *testing.T) {
	for _, uri := range []string{"", "127.0.0.1:9650", "ftp://x", "http://", "http://x?y=1"} {
		_, err := client.New(uri, "chain", client.DefaultConfig())
		require.Error(t, err, uri)
	}
	_, err := client.New("http://127.0.0.1:9650", "", client.DefaultConfig())
	require.Error(t, err)
	cfg := client.DefaultConfig()
	cfg.MaxResponseBytes = 0
	_, err = client.New("http://127.0.0.1:9650", "c", cfg)
	require.Error(t, err)
}
