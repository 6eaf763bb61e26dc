package api_test

import (
	"encoding/json"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
)

// TestIDsWriteAsAvalanchego: an ID and a NodeID read and write exactly as
// avalanchego's ids.ID and ids.NodeID, so nodes and clients of either kind
// understand each other.
func TestIDsWriteAsAvalanchego(t *testing.T) {
	require := require.New(t)
	for _, id := range []ids.ID{ids.Empty, {0, 0, 1}, ids.GenerateTestID(), {0xff, 0xff}} {
		want, err := json.Marshal(id)
		require.NoError(err)
		got, err := json.Marshal(api.ID(id))
		require.NoError(err)
		require.Equal(string(want), string(got))
		require.Equal(id.String(), api.ID(id).String())
		var back api.ID
		require.NoError(json.Unmarshal(want, &back))
		require.Equal(id, ids.ID(back))
	}
	for _, id := range []ids.NodeID{ids.EmptyNodeID, ids.GenerateTestNodeID(), {0, 0, 0, 9}} {
		want, err := json.Marshal(id)
		require.NoError(err)
		got, err := json.Marshal(api.NodeID(id))
		require.NoError(err)
		require.Equal(string(want), string(got))
		var back api.NodeID
		require.NoError(json.Unmarshal(want, &back))
		require.Equal(id, ids.NodeID(back))
	}
}

// FuzzID: whatever 32 bytes, the CB58 form is avalanchego's and reads back.
func FuzzID(f *testing.F) {
	f.Add(make([]byte, 32))
	f.Fuzz(func(t *testing.T, b []byte) {
		var id ids.ID
		copy(id[:], b)
		require.Equal(t, id.String(), api.ID(id).String())
		back, err := api.ParseID(id.String())
		require.NoError(t, err)
		require.Equal(t, id, ids.ID(back))
	})
}

// TestBadIDs: a wrong length, checksum, alphabet or prefix is refused.
func TestBadIDs(t *testing.T) {
	good := ids.GenerateTestID().String()
	for _, s := range []string{"", "1", good[:len(good)-1], good + "1", "0" + good[1:], "l" + good[1:], ids.ShortEmpty.String()} {
		_, err := api.ParseID(s)
		require.ErrorIs(t, err, api.ErrBadID, s)
	}
	node := ids.GenerateTestNodeID().String()
	for _, s := range []string{node[len(api.NodeIDPrefix):], "NodeID-", "nodeid-" + node[len(api.NodeIDPrefix):], good} {
		_, err := api.ParseNodeID(s)
		require.ErrorIs(t, err, api.ErrBadID, s)
	}
	var id api.ID
	require.Error(t, json.Unmarshal([]byte(`5`), &id))
	require.NoError(t, json.Unmarshal([]byte(`null`), &id))
	require.Equal(t, api.ID{}, id, "null leaves the zero ID, as avalanchego's does")
}
