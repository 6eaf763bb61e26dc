package vm_test

// Scoped write tokens (issue 30, finding 7): a token names the ranges and
// the write methods it may use; a SeaweedFS prefix's floor and volume
// ranges need a token that names them.

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/vm/config"
)

// ownerURL is the API of the node that owns rk.
func (an *authNet) ownerURL(rk string) string {
	var o api.OwnerReply
	require.Nil(an.t, rpcCall(an.t, an.url(0), "getOwner", api.RangeArgs{Range: rk}, &o))
	for i, k := range an.keys {
		if api.NodeID(k.NodeID) == o.Owner {
			return an.url(i)
		}
	}
	an.t.Fatalf("no node owns %s", rk)
	return ""
}

// forbidden decodes a Forbidden answer's data.
func forbidden(t *testing.T, e *rpcErr) api.ForbiddenData {
	t.Helper()
	require.NotNil(t, e, "a Forbidden answer")
	require.Equal(t, api.CodeForbidden, e.Code, "a Forbidden answer: %s", e.Message)
	var d api.ForbiddenData
	require.NoError(t, json.Unmarshal(e.Data, &d))
	return d
}

// scopedConfig is a chain config, written as an operator writes it, with
// a gateway's token scoped to prod-eu1's ranges, the SeaweedFS masters'
// token naming their key and volume ranges, and the cutover tool's naming
// the floors.
func scopedConfig(t *testing.T) (gw, masters, cutover string, cc config.ChainConfig) {
	gw, masters, cutover = "schain_gateway-"+t.Name(), "schain_masters-"+t.Name(), "schain_cutover-"+t.Name()
	raw := fmt.Sprintf(`{"writeTokens": [
		{"name": "gateway", "sha256": %q, "ranges": ["prod-eu1/*"], "methods": ["allocate", "allocateBatch", "putManifest"]},
		{"name": "masters", "sha256": %q, "ranges": ["prod-eu1/keys/*", "prod-eu1/volumes"], "methods": ["allocate", "allocateBatch"]},
		{"name": "cutover", "sha256": %q, "ranges": ["prod-eu1/floor/*"], "methods": ["allocate", "reclaim"]}
	]}`, config.TokenHash(gw), config.TokenHash(masters), config.TokenHash(cutover))
	cc, err := config.ParseChainConfig([]byte(raw))
	require.NoError(t, err, "a chain config with scoped tokens")
	return gw, masters, cutover, cc
}

// TestScopedTokenCannotBreakACluster: a token for prod-eu1/* cannot move
// the counters a SeaweedFS cluster's safety rests on: one allocation on
// <prefix>/volumes or on a key band <prefix>/keys/<n> with a huge floor
// would stop new volume ids or file keys forever (counters only go up; issue
// 46, item 3), one on <prefix>/floor/keys would pass the cutover guard
// without a cutover. Each refusal names the missing scope.
func TestScopedTokenCannotBreakACluster(t *testing.T) {
	require := require.New(t)
	gw, masters, cutover, cc := scopedConfig(t)
	an := newAuthNet(t, 2, cc)
	an.ready(10)

	for _, rk := range []string{"prod-eu1/volumes", "prod-eu1/floor/keys", "prod-eu1/floor/volumes", "prod-eu1/keys/0", "prod-eu1/keys/7"} {
		e, _ := authCall(t, an.ownerURL(rk), bearerOf(gw), "allocate", api.AllocateArgs{Range: rk, Count: 1, Floor: math.MaxUint64 - 1}, nil)
		d := forbidden(t, e)
		require.Equal(api.ScopeRange, d.Reason, rk)
		require.Equal(rk, d.Range, "the refusal names the range")
		require.Equal("gateway", d.Token)
		require.Contains(e.Message, rk)
		require.Zero(counter(t, an.vms[0], rk), "%s untouched", rk)
	}
	// Outside its prefix, and a method it was not given.
	e, _ := authCall(t, an.ownerURL("prod-us1/photos"), bearerOf(gw), "allocate", api.AllocateArgs{Range: "prod-us1/photos", Count: 1}, nil)
	require.Equal(api.ScopeRange, forbidden(t, e).Reason)
	e, _ = authCall(t, an.ownerURL("prod-eu1/keys/0"), bearerOf(masters), "putManifest", api.PutManifestArgs{Bucket: "prod-eu1/keys/0", Key: "k", Deleted: true}, nil)
	d := forbidden(t, e)
	require.Equal(api.ScopeMethod, d.Reason)
	require.Equal("putManifest", d.Method, "the refusal names the method")
	require.Positive(an.rejects(0, "forbidden", "masters")+an.rejects(1, "forbidden", "masters"), "counted under the token's name")
	// reclaim writes its chunks' buckets: each must be in the ranges.
	e, _ = authCall(t, an.url(0), bearerOf(gw), "reclaim", api.ReclaimArgs{Chunks: []api.ChunkRef{{Range: "prod-eu1/x", ID: 1}}}, nil)
	require.Equal(api.ScopeMethod, forbidden(t, e).Reason, "not among the gateway's methods")
	e, _ = authCall(t, an.url(0), bearerOf(cutover), "reclaim", api.ReclaimArgs{Chunks: []api.ChunkRef{{Range: "prod-eu2/x", ID: 1}}}, nil)
	d = forbidden(t, e)
	require.Equal(api.ScopeRange, d.Reason)
	require.Equal("prod-eu2", d.Range, "a chunk's bucket")

	// What each was given works.
	for _, w := range []struct{ tok, rk string }{
		{gw, "prod-eu1/photos"},
		{masters, "prod-eu1/keys/3"}, {masters, "prod-eu1/volumes"},
		{cutover, "prod-eu1/floor/keys"},
	} {
		var rep api.AllocateReply
		e, _ := authCall(t, an.ownerURL(w.rk), bearerOf(w.tok), "allocate", api.AllocateArgs{Range: w.rk, Count: 1}, &rep)
		require.Nil(e, "%s: %+v", w.rk, e)
	}

	// In a batch, each request is answered as alone: the guarded one is
	// refused, the others go through.
	owner := an.ownerURL("prod-eu1/volumes")
	var other string
	for k := 0; other == ""; k++ {
		if rk := fmt.Sprintf("prod-eu1/b%d", k); an.ownerURL(rk) == owner {
			other = rk
		}
	}
	var br api.AllocateBatchReply
	e, _ = authCall(t, owner, bearerOf(gw), "allocateBatch", api.AllocateBatchArgs{Requests: []api.AllocateArgs{
		{Range: other, Count: 1}, {Range: "prod-eu1/volumes", Count: 1, Floor: math.MaxUint64 / 2},
	}}, &br)
	require.Nil(e)
	require.NotNil(br.Results[0].Reply, "%+v", br.Results[0].Error)
	require.NotNil(br.Results[1].Error)
	require.Equal(api.CodeForbidden, br.Results[1].Error.Code)
	require.True(strings.Contains(br.Results[1].Error.Message, "prod-eu1/volumes"), br.Results[1].Error.Message)
}

// TestUnscopedTokenStillWritesEverything: a token written before scopes
// (no ranges, no methods) keeps working for every range, the guarded ones
// included, and the node warns about it at start.
func TestUnscopedTokenStillWritesEverything(t *testing.T) {
	require := require.New(t)
	tok, a := tokenFor(t, "legacy")
	cc := config.DefaultChainConfig()
	cc.WriteTokens = []config.WriteToken{a}
	an := newAuthNet(t, 2, cc)
	an.ready(10)
	for _, rk := range []string{"prod-eu1/volumes", "prod-eu1/floor/keys", "photos"} {
		e, _ := authCall(t, an.ownerURL(rk), bearerOf(tok), "allocate", api.AllocateArgs{Range: rk, Count: 1}, nil)
		require.Nil(e, "%s: %+v", rk, e)
	}
	require.Contains(an.logs.String(), "names no ranges or methods")
}
