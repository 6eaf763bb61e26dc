package client_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/vm/api/apitest"
)

// TestDirectURIs: each node's announced direct API replaces its URI, a
// node announcing none keeps its own, and a node that does not answer is
// named in the error.
func TestDirectURIs(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 3)
	f.Nodes[1].SetDirectURI("http://127.0.0.1:9660")
	got, err := client.DirectURIs(ctx, f.URIs(), f.ChainID.String(), client.DefaultConfig())
	require.NoError(err)
	require.Equal([]string{f.Nodes[0].URI, "http://127.0.0.1:9660", f.Nodes[2].URI}, got)

	gone := httptest.NewServer(nil)
	gone.Close()
	_, err = client.DirectURIs(ctx, []string{f.Nodes[0].URI, gone.URL}, f.ChainID.String(), client.DefaultConfig())
	require.ErrorContains(err, "asking "+gone.URL+" for its direct API")
}
