package client_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
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

// TestDirectURIsStayOnTheNodesHost: the client sends its write token with
// every call, so an announced direct API on another host (a rogue or
// misconfigured node, or whoever answers in its name) or an https node
// announcing plain http is refused by name, not followed.
func TestDirectURIsStayOnTheNodesHost(t *testing.T) {
	ctx := testCtx(t)
	f := apitest.New(t, 1)
	for _, announced := range []string{
		"http://attacker.example:9660",
		"http://10.1.2.3:9660",
		"http://127.0.0.1:9660/steal",
		"http://user@127.0.0.1:9660",
		"ftp://127.0.0.1:9660",
	} {
		f.Nodes[0].SetDirectURI(announced)
		_, err := client.DirectURIs(ctx, f.URIs(), f.ChainID.String(), client.DefaultConfig())
		require.ErrorIs(t, err, client.ErrForeignDirect, announced)
	}
	https := httptest.NewTLSServer(f.Nodes[0].Handler())
	defer https.Close()
	f.Nodes[0].SetDirectURI(strings.Replace(https.URL, "https://", "http://", 1))
	cfg := client.DefaultConfig()
	cfg.HTTPClient = https.Client()
	_, err := client.DirectURIs(ctx, []string{https.URL}, f.ChainID.String(), cfg)
	require.ErrorIs(t, err, client.ErrForeignDirect, "https down to http")
	require.ErrorContains(t, err, "downgrade")
}
