package api_test

import (
	"encoding/json"
	"math"
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

// TestReceiptEntry: Entry finds a transaction's entry by its index in a
// whole receipt and in one carrying a single entry (First), and reports
// the entries a receipt does not carry.
func TestReceiptEntry(t *testing.T) {
	require := require.New(t)
	whole := &api.ReceiptReply{Entries: []api.ReceiptEntry{{Key: "a"}, {Key: "b"}, {Key: "c"}}}
	own := &api.ReceiptReply{Entries: []api.ReceiptEntry{{Key: "c"}}, First: 2}
	for i, key := range []string{"a", "b", "c"} {
		e, ok := whole.Entry(i)
		require.True(ok)
		require.Equal(key, e.Key)
	}
	e, ok := own.Entry(2)
	require.True(ok)
	require.Equal("c", e.Key)
	for _, i := range []int{-1, 0, 1, 3} {
		_, ok := own.Entry(i)
		require.False(ok, "entry %d", i)
	}
	_, ok = whole.Entry(3)
	require.False(ok)
	_, ok = (&api.ReceiptReply{}).Entry(0)
	require.False(ok)

	// A hostile node's first must not make a client index out of range.
	for _, first := range []int{-1, math.MinInt, math.MaxInt} {
		bad := &api.ReceiptReply{Entries: []api.ReceiptEntry{{Key: "a"}}, First: first}
		for _, i := range []int{0, 1, math.MaxInt, -1, math.MinInt} {
			_, ok := bad.Entry(i)
			require.Equal(first == math.MaxInt && i == math.MaxInt, ok, "first %d, entry %d", first, i)
		}
	}

	raw, err := json.Marshal(own)
	require.NoError(err)
	var back api.ReceiptReply
	require.NoError(json.Unmarshal(raw, &back))
	require.Equal(2, back.First, "first travels")
}
