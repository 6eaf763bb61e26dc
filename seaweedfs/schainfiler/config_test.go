package schainfiler_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/seaweedfs/schainfiler"
	"github.com/s-chain/schain/tests/framework/apitest"
)

func TestOpenReadsTheSChainTable(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("tok\n"), 0o600))
	table := func(kv ...string) func(string) string {
		m := map[string]string{"rpc": "http://127.0.0.1:1", "chain": "c", "token_file": token}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string {
			_, known := schainfiler.Keys[k]
			require.True(t, known, "the store reads only documented keys: %s", k)
			return m[k]
		}
	}
	s, err := schainfiler.Open(table("key_prefix", "weed", "volume_band", "4", "reclaim_every", "0s"))
	require.NoError(t, err)
	s.Close()
	for name, bad := range map[string]func(string) string{
		"no rpc":           table("rpc", ""),
		"no token":         table("token_file", ""),
		"bucket apart":     table("key_prefix", "weed", "bucket", "filer"),
		"bad band":         table("volume_band", "-1"),
		"bad limit":        table("max_key_len", "many"),
		"bad reclaim time": table("reclaim_every", "soon"),
		"bad direct":       table("direct", "sometimes"),
	} {
		_, err := schainfiler.Open(bad)
		require.Error(t, err, name)
	}
}

// TestOpenCallsTheDirectAPI: the store's reads and writes go to the
// direct API a node announces (unless the table says direct = false),
// not through the node's HTTP server.
func TestOpenCallsTheDirectAPI(t *testing.T) {
	for _, direct := range []string{"", "false"} {
		f := apitest.New(t, 1)
		f.RequireToken(apitest.Token)
		f.SetOwner("filer", 0)
		var served atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			f.Nodes[0].Handler().ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		f.Nodes[0].SetDirectURI(srv.URL)
		token := filepath.Join(t.TempDir(), "token")
		require.NoError(t, os.WriteFile(token, []byte(apitest.Token), 0o600))
		table := map[string]string{"rpc": f.URIs()[0], "chain": f.ChainID.String(), "token_file": token, "reclaim_every": "0s", "direct": direct}
		s, err := schainfiler.Open(func(k string) string { return table[k] })
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		require.NoError(t, s.Put(ctx, "/d", "a", []byte("e"), nil, false))
		_, err = s.Find(ctx, "/d", "a")
		require.NoError(t, err, "the entry written is found")
		cancel()
		s.Close()
		if direct == "false" {
			require.Zero(t, served.Load(), "direct = false: the node's API only")
		} else {
			require.GreaterOrEqual(t, served.Load(), int64(2), "the write and the read go to the direct API")
		}
	}
}
