package client

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
)

// putReply is an answer as a filer store reads it: a write's own receipt
// entry and the manifest of the object's directory.
func putReply(tb testing.TB) []byte {
	tb.Helper()
	head := api.Head{AcceptedHeight: 812, AcceptedID: api.ID(ids.GenerateTestID())}
	txID := api.ID(ids.GenerateTestID())
	dir := &api.ManifestReply{
		Head:       head,
		Manifest:   api.Manifest{Bucket: "bench", Key: "/buckets/bench", ContentHash: api.ID(ids.GenerateTestID())},
		Version:    3 << 24,
		Height:     3,
		Attributes: bytes.Repeat([]byte{0x5a}, 240),
	}
	reply := api.PutManifestReply{
		TxID: txID, Index: 17, PChainHeight: 40, Owner: api.NodeID(ids.GenerateTestNodeID()),
		Receipt: &api.ReceiptReply{Head: head, TxID: txID, Status: api.StatusAccepted, Height: 812, First: 17,
			Entries: []api.ReceiptEntry{{Bucket: "bench", Key: "/buckets/bench/obj-000017", Version: 812 << 24}}},
		Version: 812 << 24,
		Then:    &api.ThenReply{Key: "/buckets/bench", Manifest: dir},
	}
	raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "result": reply})
	require.NoError(tb, err)
	return raw
}

func TestDecodeReadsTheResultWhole(t *testing.T) {
	require := require.New(t)
	c := &Client{}
	raw := putReply(t)
	var want struct {
		Result api.PutManifestReply `json:"result"`
	}
	require.NoError(json.Unmarshal(raw, &want))

	// A reply that held an earlier answer holds this one only, also where
	// this answer leaves a field out.
	got := &api.PutManifestReply{Version: 1, Receipt: &api.ReceiptReply{Error: "stale"}, Then: &api.ThenReply{Key: "stale"}}
	require.NoError(c.decode("m", "u", 200, raw, 7, got))
	require.Equal(want.Result, *got)

	for name, body := range map[string]string{
		"null result":   `{"jsonrpc":"2.0","result":null,"id":7}`,
		"absent result": `{"jsonrpc":"2.0","id":7}`,
	} {
		err := c.decode("m", "u", 200, []byte(body), 7, new(api.PutManifestReply))
		require.ErrorIs(err, ErrMalformedResponse, name)
		require.ErrorContains(err, "neither result nor error", name)
	}
	// A result of the wrong shape is named as such, after the envelope's checks.
	err := c.decode("m", "u", 200, []byte(`{"jsonrpc":"2.0","result":{"index":"x"},"id":8}`), 7, new(api.PutManifestReply))
	require.ErrorContains(err, "answer id 8")
	err = c.decode("m", "u", 200, []byte(`{"jsonrpc":"2.0","result":{"index":"x"},"id":7}`), 7, new(api.PutManifestReply))
	require.ErrorContains(err, "result:")
	// An error wins over a result of the wrong shape.
	err = c.decode("m", "u", 200, []byte(`{"jsonrpc":"2.0","result":{"index":"x"},"error":{"code":-32000,"message":"no"},"id":7}`), 7, new(api.PutManifestReply))
	var apiErr *api.Error
	require.ErrorAs(err, &apiErr)
}

func BenchmarkDecode(b *testing.B) {
	c := &Client{}
	raw := putReply(b)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.decode("m", "u", 200, raw, 7, new(api.PutManifestReply)); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecode feeds any answer to decode: it never panics, and it takes a
// result only from a JSON-RPC 2.0 answer to this request.
func FuzzDecode(f *testing.F) {
	f.Add(putReply(f), 200)
	f.Add([]byte(`{"jsonrpc":"2.0","result":null,"id":7}`), 200)
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"index":"x"},"id":7}`), 200)
	f.Add([]byte(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"no"},"id":7}`), 500)
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"then":{"manifest":null}},"result":{"index":3},"id":7}`), 200)
	c := &Client{}
	f.Fuzz(func(t *testing.T, raw []byte, status int) {
		reply := new(api.PutManifestReply)
		if err := c.decode("m", "u", status, raw, 7, reply); err != nil {
			return
		}
		var env struct {
			Version string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		require.NoError(t, json.Unmarshal(raw, &env))
		require.Equal(t, "2.0", env.Version)
		require.Equal(t, "7", string(env.ID))
		require.True(t, status >= 200 && status <= 299)
	})
}
