package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
)

// TestWaitJSON: wait reads a boolean or a name, writes what older nodes
// read, and refuses anything else a client might send.
func TestWaitJSON(t *testing.T) {
	for in, want := range map[string]api.Wait{
		`false`: api.WaitNone, `null`: api.WaitNone, `""`: api.WaitNone,
		`true`: api.WaitAccepted, `"accepted"`: api.WaitAccepted, `"final"`: api.WaitFinal,
	} {
		var w api.Wait
		require.NoError(t, json.Unmarshal([]byte(in), &w), in)
		require.Equal(t, want, w, in)
		out, err := json.Marshal(w)
		require.NoError(t, err)
		var back api.Wait
		require.NoError(t, json.Unmarshal(out, &back))
		require.Equal(t, want, back, "%s round-trips as %s", in, out)
	}
	for _, in := range []string{`1`, `"FINAL"`, `"soon"`, `{}`, `[]`, `"final "`} {
		var w api.Wait
		require.ErrorIs(t, json.Unmarshal([]byte(in), &w), api.ErrBadWait, in)
	}
	var args api.AllocateArgs
	require.ErrorIs(t, json.Unmarshal([]byte(`{"range":"r","count":1,"wait":"eventually"}`), &args), api.ErrBadWait)
}
