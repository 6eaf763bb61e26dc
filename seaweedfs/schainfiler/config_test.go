package schainfiler_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/seaweedfs/schainfiler"
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
	} {
		_, err := schainfiler.Open(bad)
		require.Error(t, err, name)
	}
}
