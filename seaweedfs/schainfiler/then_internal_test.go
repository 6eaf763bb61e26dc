package schainfiler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
)

// TestThenRecordTakesOnlyWhatWasAsked: an answer for another key (a node
// that answers wrongly or lies), or one nobody asked for, is not taken as
// the directory's record; the store then reads on its own.
func TestThenRecordTakesOnlyWhatWasAsked(t *testing.T) {
	require := require.New(t)
	found := &api.ThenReply{Key: "dir", Manifest: &api.ManifestReply{Version: 7, Attributes: []byte("d")}}
	require.Nil(thenRecord("other", found), "an answer for another key")
	require.Nil(thenRecord("", found), "an answer nobody asked for")
	require.Nil(thenRecord("dir", nil), "no answer: an older node")
	require.Equal(&Record{Key: "dir", Version: 7, Attributes: []byte("d")}, thenRecord("dir", found))
	require.Equal(&Record{Key: "dir", Deleted: true}, thenRecord("dir", &api.ThenReply{Key: "dir"}), "none there")
}
