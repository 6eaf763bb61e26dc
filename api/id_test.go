package api_test

import (
	"bytes"
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
	f.Add(append(make([]byte, 5), 0xff, 1, 2))
	f.Add(bytes.Repeat([]byte{0xff}, 32))
	f.Fuzz(func(t *testing.T, b []byte) {
		var id ids.ID
		copy(id[:], b)
		require.Equal(t, id.String(), api.ID(id).String())
		back, err := api.ParseID(id.String())
		require.NoError(t, err)
		require.Equal(t, id, ids.ID(back))

		var node ids.NodeID
		copy(node[:], b)
		require.Equal(t, node.String(), api.NodeID(node).String())
		nodeBack, err := api.ParseNodeID(node.String())
		require.NoError(t, err)
		require.Equal(t, node, ids.NodeID(nodeBack))
	})
}

// BenchmarkID: writing and reading an ID, which every reply does.
func BenchmarkID(b *testing.B) {
	var id api.ID
	for i := range id {
		id[i] = byte(i*7 + 3)
	}
	s := id.String()
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			_ = id.String()
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			_, _ = api.ParseID(s)
		}
	})
}

// FuzzParseID: whatever string, an ID reads as avalanchego reads it, or
// neither reads it.
func FuzzParseID(f *testing.F) {
	f.Add(ids.GenerateTestID().String())
	f.Add("1111111111111111111111111111111111111111111111111")
	f.Add("11111111111111111111111111111111LpoYY")
	f.Fuzz(func(t *testing.T, s string) {
		want, wantErr := ids.FromString(s)
		got, err := api.ParseID(s)
		require.Equal(t, wantErr == nil, err == nil, "%q: avalanchego %v, api %v", s, wantErr, err)
		if err == nil {
			require.Equal(t, want, ids.ID(got))
		}
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
