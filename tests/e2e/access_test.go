//go:build e2e

package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
)

// TestAccessControl: every node got the network's token hash in its chain
// config; a write without it (or with another token) is refused with the
// unauthorized code by the range's owner itself, signs nothing, and reads
// stay open.
func TestAccessControl(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := os.Stat(network.TokenPath())
	require.NoError(err)
	require.Equal(os.FileMode(0o600), info.Mode().Perm(), "the token file is private")

	r := router(t)
	owned := ownedRanges(ctx, t, r, "access", 1)
	for _, nd := range network.Nodes {
		rk := owned[nd.NodeID][0]
		for name, tok := range map[string]string{"no token": "", "wrong token": "schain_not-this-network"} {
			cfg := client.DefaultConfig()
			cfg.Token = tok
			c, err := client.New(nd.URI, network.ChainID.String(), cfg)
			require.NoError(err)
			_, err = c.Allocate(ctx, api.AllocateArgs{Range: rk, Count: 1})
			require.ErrorIs(err, client.ErrUnauthorized, "%s at the owner %s", name, nd.NodeID)
			e, ok := client.AsError(err)
			require.True(ok)
			require.Equal(api.CodeUnauthorized, e.Code)
			d, _ := client.IsUnauthorized(err)
			want := api.ReasonInvalid
			if tok == "" {
				want = api.ReasonMissing
			}
			require.Equal(want, d.Reason)
			_, err = c.PutManifest(ctx, api.PutManifestArgs{Bucket: rk, Key: "k", Deleted: true})
			require.ErrorIs(err, client.ErrUnauthorized, name)
			_, err = c.GetNode(ctx)
			require.NoError(err, "reads need no token")
		}
		a, err := nodeClient(t, nd).GetAllocation(ctx, rk)
		require.NoError(err)
		require.Zero(a.Next, "nothing was allocated by the refused writes")
	}
	// A body above the default maxRequestBytes (1 MiB) is refused by size,
	// through the node's HTTP server and the plugin boundary.
	big := `{"jsonrpc":"2.0","id":1,"method":"schain.getNode","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, network.ChainURI(network.Nodes[0]), strings.NewReader(big))
	require.NoError(err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
	require.Contains(string(body), "maxRequestBytes")
	_, err = nodeClient(t, network.Nodes[0]).GetNode(ctx)
	require.NoError(err, "still serving")

	// With the token, the owner signs.
	rk := owned[network.Nodes[0].NodeID][0]
	rep, err := r.Allocate(ctx, api.AllocateArgs{Range: rk, Count: 1, Wait: api.WaitAccepted})
	require.NoError(err)
	require.NotNil(rep.Receipt)
	require.Equal(api.StatusAccepted, rep.Receipt.Status)
}
