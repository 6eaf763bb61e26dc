package client_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/apitest"
)

// hostile serves node's API and rewrites the result of the methods in lie
// (by method name without the service prefix): a validator that answers
// whatever suits it.
func hostile(t *testing.T, node *apitest.Node, lie map[string]func(result map[string]any)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		rec := httptest.NewRecorder()
		fwd := r.Clone(r.Context())
		fwd.Body = io.NopCloser(bytes.NewReader(body))
		node.Handler().ServeHTTP(rec, fwd)
		out := rec.Body.Bytes()
		if f := lie[strings.TrimPrefix(req.Method, api.Service+".")]; f != nil {
			var resp map[string]any
			if json.Unmarshal(out, &resp) == nil {
				if res, ok := resp["result"].(map[string]any); ok {
					f(res)
					out, _ = json.Marshal(resp)
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// claimHeight makes an answer name a last accepted block far ahead.
func claimHeight(res map[string]any) { res["acceptedHeight"] = 1 << 40 }

// TestFreshReadsIgnoreAHostileNode: one validator of four (a quarter of
// the stake) answers fresh reads with a counter at its end and a height far
// ahead of the chain. A fresh read takes only what more than 1/3 of the
// stake vouches for: the honest counter and the honest height (a review
// found one hostile node stalling the masters with 2^64-1).
func TestFreshReadsIgnoreAHostileNode(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 4)
	r := newRouter(t, f)
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "p/keys/0", Count: 99, Wait: api.WaitAccepted})
	require.NoError(err)

	uris := f.URIs()
	uris[3] = hostile(t, f.Nodes[3], map[string]func(map[string]any){
		"getAllocation": func(res map[string]any) { res["next"] = uint64(math.MaxUint64); claimHeight(res) },
		"getNode":       claimHeight,
	})
	lying, err := client.NewRouter(uris, f.ChainID.String(), fastRouterConfig())
	require.NoError(err)
	fresh := lying.Fresh()
	a, err := fresh.GetAllocation(ctx, "p/keys/0")
	require.NoError(err)
	require.Equal(uint64(99), a.Next, "the hostile counter is not taken")
	head, err := fresh.Newest(ctx)
	require.NoError(err)
	require.Equal(a.Head.AcceptedHeight, head.AcceptedHeight, "the hostile height is not taken")
	require.Less(head.AcceptedHeight, uint64(1<<40))
}

// TestFreshReadsIgnoreAHostileMembership: the hostile validator answers a
// membership view far ahead in which a live validator stopped
// heartbeating and its own weight is a thousand times the others'. The
// eviction watcher reads it fresh: it must get the honest view, weighted
// by the stake every honest node reports, never the hostile one's.
func TestFreshReadsIgnoreAHostileMembership(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 4)
	honest := api.MembershipReply{PChainHeight: 7, Round: 12, Generation: 3}
	for _, n := range f.Nodes {
		last := uint64(12)
		honest.Members = append(honest.Members, api.Member{NodeID: n.ID, Weight: 1})
		honest.Validators = append(honest.Validators, api.ValidatorLiveness{NodeID: n.ID, Weight: 1, Member: true, LastHeartbeat: &last})
	}
	f.SetMembership(honest)
	uris := f.URIs()
	uris[3] = hostile(t, f.Nodes[3], map[string]func(map[string]any){
		"getMembership": func(res map[string]any) {
			claimHeight(res)
			res["round"] = 40
			vs := res["validators"].([]any)
			delete(vs[1].(map[string]any), "lastHeartbeat")
			vs[1].(map[string]any)["member"] = false
			vs[3].(map[string]any)["weight"] = 1000
		},
	})
	lying, err := client.NewRouter(uris, f.ChainID.String(), fastRouterConfig())
	require.NoError(err)
	m, err := lying.Fresh().GetMembership(ctx)
	require.NoError(err)
	require.Equal(uint64(12), m.Round)
	require.True(m.Validators[1].Member, "the live validator stays a member")
	require.NotNil(m.Validators[1].LastHeartbeat)
	require.Equal(uint64(1), m.Validators[3].Weight)
}

// TestFreshReadsCountAnIdentityOnce: an endpoint that claims another
// validator's identity counts for neither: with the impostor standing in
// for node 0 beside node 0 itself, the honest nodes 1 and 2 hold half of
// the stake, and the read is refused rather than answered with the
// impostor's counter.
func TestFreshReadsCountAnIdentityOnce(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 4)
	r := newRouter(t, f)
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "p/keys/0", Count: 99, Wait: api.WaitAccepted})
	require.NoError(err)
	impostor := hostile(t, f.Nodes[3], map[string]func(map[string]any){
		"getNode":       func(res map[string]any) { res["nodeID"] = f.Nodes[0].ID.String() },
		"getAllocation": func(res map[string]any) { res["next"] = uint64(math.MaxUint64) },
	})
	uris := f.URIs()
	uris[3] = impostor
	lying, err := client.NewRouter(uris, f.ChainID.String(), fastRouterConfig())
	require.NoError(err)
	_, err = lying.Fresh().GetAllocation(ctx, "p/keys/0")
	require.ErrorIs(err, client.ErrNoQuorum)
	require.ErrorContains(err, "claimed by 2 endpoints")
}

// TestFreshReadsTakeTheCallersStake: with the caller's own P-chain view
// (PChainStake against a node's P-chain API) the weights are the
// P-chain's, whatever the nodes report.
func TestFreshReadsTakeTheCallersStake(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 4)
	pchain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		require.NoError(json.NewDecoder(r.Body).Decode(&req))
		var result any
		switch req.Method {
		case "platform.validatedBy":
			result = map[string]string{"subnetID": "2bRCr6B4MiEfSjidDwxDpdCyviwnfUVqB2HGwhm947w9YYqb7r"}
		case "platform.getCurrentValidators":
			vs := []map[string]string{}
			for i, n := range f.Nodes {
				w := "1"
				if i == 0 {
					w = "10"
				}
				vs = append(vs, map[string]string{"nodeID": n.ID.String(), "weight": w})
			}
			result = map[string]any{"validators": vs}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": result})
	}))
	t.Cleanup(pchain.Close)
	cfg := fastRouterConfig()
	cfg.Stake = client.PChainStake(pchain.URL, f.ChainID.String(), nil)
	r, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(err)
	for i := 1; i < 4; i++ {
		f.Nodes[i].SetNotReady("bootstrapping")
	}
	_, err = r.Fresh().Newest(ctx)
	require.NoError(err, "node 0 alone holds 10 of 13")
	f.Nodes[1].SetNotReady("")
	f.Nodes[0].SetNotReady("bootstrapping")
	_, err = r.Fresh().Newest(ctx)
	require.ErrorIs(err, client.ErrNoQuorum, "1 of 13")
}

// TestOwnerReadsFollowTheOwner (review item 4): a filer's router caches a
// bucket's owner; the bucket moves at the same P-chain height; the former
// owner stopped following the chain and still holds the object another
// filer deleted. Its plain reads answer the stale object; a read asking
// for the owner is refused with the new owner named, and the router reads
// there: the deletion another filer was answered for.
func TestOwnerReadsFollowTheOwner(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 2)
	f.SetOwner("b", 0)
	former := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(err)
		var req struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				AsOwner bool `json:"asOwner"`
			} `json:"params"`
		}
		require.NoError(json.Unmarshal(body, &req))
		var out any
		switch {
		case req.Method != api.Service+".getManifest":
			fwd := r.Clone(r.Context())
			fwd.Body = io.NopCloser(bytes.NewReader(body))
			f.Nodes[0].Handler().ServeHTTP(w, fwd)
			return
		case req.Params.AsOwner:
			out = map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{
				"code": api.CodeNotOwner, "message": "not the owner",
				"data": api.NotOwnerData{Range: "b", Owner: f.Nodes[1].ID, PChainHeight: 7},
			}}
		default:
			out = map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": api.ManifestReply{
				Head: api.Head{AcceptedHeight: 3}, Manifest: api.Manifest{Bucket: "b", Key: "k"}, Version: 1, Height: 2,
			}}
		}
		w.Header().Set("Content-Type", "application/json")
		require.NoError(json.NewEncoder(w).Encode(out))
	}))
	t.Cleanup(former.Close)
	uris := f.URIs()
	uris[0] = former.URL
	r, err := client.NewRouter(uris, f.ChainID.String(), fastRouterConfig())
	require.NoError(err)
	_, err = r.GetOwner(ctx, "b")
	require.NoError(err)
	_, err = r.Fresh().Newest(ctx) // learns every endpoint's identity
	require.NoError(err)
	f.MoveOwner("b", 1)

	_, err = r.GetManifestAtOwner(ctx, "b", "k")
	require.ErrorIs(err, client.ErrNotFound, "the new owner's answer, not the former owner's stale object")
}

// TestFreshReadsWaitForAnAcknowledgedWrite: a write is acknowledged once
// its owner accepted it; for a moment the other nodes have not, and only
// one node answers the newer counter: more than 1/3 of the stake does not
// vouch for it yet. The fresh read asks again until they do (a rollback's
// bound must cover every acknowledged key), instead of taking the older
// value the others vouch for (TestL_PausedNode caught that).
func TestFreshReadsWaitForAnAcknowledgedWrite(t *testing.T) {
	require := require.New(t)
	ctx := testCtx(t)
	f := apitest.New(t, 4)
	r := newRouter(t, f)
	f.SetOwner("p/keys/0", 0)
	_, err := r.Allocate(ctx, api.AllocateArgs{Range: "p/keys/0", Count: 99, Wait: api.WaitAccepted})
	require.NoError(err)
	for _, n := range f.Nodes[1:] {
		n.Freeze()
	}
	_, err = r.Allocate(ctx, api.AllocateArgs{Range: "p/keys/0", Count: 1 << 20, Wait: api.WaitAccepted})
	require.NoError(err)
	caughtUp := time.AfterFunc(100*time.Millisecond, func() {
		for _, n := range f.Nodes[1:] {
			n.Thaw()
		}
	})
	t.Cleanup(func() { caughtUp.Stop() })

	cfg := fastRouterConfig()
	cfg.FreshSettle = 5 * time.Second
	fresh, err := client.NewRouter(f.URIs(), f.ChainID.String(), cfg)
	require.NoError(err)
	start := time.Now()
	a, err := fresh.Fresh().GetAllocation(ctx, "p/keys/0")
	require.NoError(err)
	require.Equal(uint64(99+1<<20), a.Next, "the acknowledged reservation")
	require.Less(time.Since(start), cfg.FreshSettle, "answered once the others caught up, not at the bound")
}
