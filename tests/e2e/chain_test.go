//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/localnet"
)

// ownedRanges finds n ranges with prefix owned by each node. Owners follow
// the membership, so it first waits until every node is a member on every
// node (a node restarted by an earlier test rejoins a few liveness rounds
// later), and it starts over if the membership changed while it looked:
// ranges found while a node was out would move to it when it came back.
func ownedRanges(ctx context.Context, t *testing.T, r *client.Router, prefix string, n int) map[ids.NodeID][]string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 5, "the membership kept changing while ranges were looked up")
		generation := wholeMembership(ctx, t)
		out := map[ids.NodeID][]string{}
		for i := 0; !ownsEnough(out, n); i++ {
			require.Less(t, i, 10_000, "HRW never gave every node a range")
			rk := fmt.Sprintf("%s-%04d", prefix, i)
			o, err := r.GetOwner(ctx, rk)
			require.NoError(t, err)
			if len(out[ids.NodeID(o.Owner)]) < n {
				out[ids.NodeID(o.Owner)] = append(out[ids.NodeID(o.Owner)], rk)
			}
		}
		if wholeMembership(ctx, t) == generation {
			return out
		}
	}
}

func ownsEnough(out map[ids.NodeID][]string, n int) bool {
	for _, nd := range network.Nodes {
		if len(out[nd.NodeID]) < n {
			return false
		}
	}
	return true
}

// wholeMembership waits until every node reports every node of the
// network as a member with a heartbeat in the current liveness round, at
// the same generation, and returns it. A member whose last heartbeat is a
// round old (a node restarted across a round boundary) is dropped at the
// next round, so only a heartbeat of this round keeps the membership whole
// for the next one too.
func wholeMembership(ctx context.Context, t *testing.T) uint64 {
	t.Helper()
	var generation uint64
	require.NoError(t, poll(ctx, func() error {
		var seen []uint64
		for _, nd := range network.Nodes {
			m, err := nodeClient(t, nd).GetMembership(ctx)
			if err != nil {
				return err
			}
			if m.Fallback || len(m.Members) != len(network.Nodes) {
				return fmt.Errorf("node %s: %d members of %d (fallback %v)", nd.NodeID, len(m.Members), len(network.Nodes), m.Fallback)
			}
			for _, v := range m.Validators {
				if v.LastHeartbeat == nil || *v.LastHeartbeat != m.Round {
					return fmt.Errorf("node %s: validator %s has no heartbeat in round %d", nd.NodeID, v.NodeID, m.Round)
				}
			}
			seen = append(seen, m.Generation)
		}
		for _, g := range seen[1:] {
			if g != seen[0] {
				return fmt.Errorf("nodes are at membership generations %v", seen)
			}
		}
		generation = seen[0]
		return nil
	}), "every node a member on every node")
	return generation
}

// agree waits until every node reports the same last accepted height and
// state root, and returns them.
func agree(ctx context.Context, t *testing.T) (uint64, ids.ID) {
	var height uint64
	var root ids.ID
	require.NoError(t, poll(ctx, func() error {
		var seen []string
		for _, nd := range network.Nodes {
			info, err := nodeClient(t, nd).GetNode(ctx)
			if err != nil {
				return err
			}
			height, root = info.Height, ids.ID(info.StateRoot)
			seen = append(seen, fmt.Sprintf("%d/%s", info.Height, info.StateRoot))
		}
		for _, s := range seen[1:] {
			if s != seen[0] {
				return fmt.Errorf("nodes differ: %v", seen)
			}
		}
		return nil
	}))
	return height, root
}

func TestA_RoutingAndAgreement(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := router(t)
	owned := ownedRanges(ctx, t, r, "route", 1)
	for owner, rs := range owned {
		rep, err := r.Allocate(ctx, api.AllocateArgs{Range: rs[0], Count: 7})
		require.NoError(err)
		require.Equal(api.NodeID(owner), rep.Owner, "routed to the owner")
		rc, err := r.WaitForReceipt(ctx, rep.TxID)
		require.NoError(err)
		require.Equal(api.StatusAccepted, rc.Status)
		require.Equal(uint64(7), rc.Entries[rep.Index].Count)
	}
	agree(ctx, t)
	for _, rs := range owned {
		for _, nd := range network.Nodes {
			a, err := nodeClient(t, nd).GetAllocation(ctx, rs[0])
			require.NoError(err)
			require.Equal(uint64(7), a.Next, "node %s", nd.NodeID)
		}
	}
	// A non-owner refuses and names the owner.
	for owner, rs := range owned {
		for _, nd := range network.Nodes {
			if nd.NodeID == owner {
				continue
			}
			_, err := nodeClient(t, nd).Allocate(ctx, api.AllocateArgs{Range: rs[0], Count: 1})
			d, ok := client.IsNotOwner(err)
			require.True(ok, "want NotOwner from %s, got %v", nd.NodeID, err)
			require.Equal(api.NodeID(owner), d.Owner)
			break
		}
	}
}

func TestB_ConcurrentLoad(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const clients, perClient, ranges = 8, 500, 64
	r := router(t)
	type sub struct {
		txID  api.ID
		index int
		rk    string
		count uint64
	}
	subs := make([][]sub, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	began := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < perClient; i++ {
				rk := fmt.Sprintf("load-%02d", (c*perClient+i)%ranges)
				count := uint64(1 + (i % 3))
				rep, err := r.Allocate(ctx, api.AllocateArgs{Range: rk, Count: count})
				if err != nil {
					errs <- fmt.Errorf("client %d request %d: %w", c, i, err)
					return
				}
				subs[c] = append(subs[c], sub{rep.TxID, rep.Index, rk, count})
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(err)
	}
	submitted := time.Since(began)
	receipts := map[api.ID]*api.ReceiptReply{}
	type iv struct{ lo, hi uint64 }
	byRange := map[string][]iv{}
	want := map[string]uint64{}
	for _, cs := range subs {
		for _, s := range cs {
			rc, ok := receipts[s.txID]
			if !ok {
				var err error
				rc, err = r.WaitForReceipt(ctx, s.txID)
				require.NoError(err)
				require.Equal(api.StatusAccepted, rc.Status, "tx %s: %s", s.txID, rc.Error)
				receipts[s.txID] = rc
			}
			e := rc.Entries[s.index]
			require.Equal(s.rk, e.Range)
			require.Equal(s.count, e.Count)
			byRange[s.rk] = append(byRange[s.rk], iv{e.Base, e.Base + e.Count})
			want[s.rk] += s.count
		}
	}
	t.Logf("%d allocations in %d txs: submitted in %s, all accepted after %s", clients*perClient, len(receipts), submitted, time.Since(began))
	agree(ctx, t) // the node a read goes to has accepted everything too
	for rk, ivs := range byRange {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].lo < ivs[j].lo })
		for i := 1; i < len(ivs); i++ {
			require.LessOrEqual(ivs[i-1].hi, ivs[i].lo, "overlapping ids in %s", rk)
		}
		a, err := r.GetAllocation(ctx, rk)
		require.NoError(err)
		require.Equal(want[rk], a.Next, "range %s: counter equals the sum of counts", rk)
	}
}

// TestB_DirectAPI: every local node announces its plugin's own door to the
// API (chain config directAPI), and pooled allocations through it (given
// its URIs, or found by the clients) come from the same pools as through
// the node: same owners, no id twice.
func TestB_DirectAPI(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc := client.DefaultRouterConfig()
	rc.Client.Token = network.Token
	uris, err := client.DirectURIs(ctx, network.ChainURIsBase(), network.ChainID.String(), rc.Client)
	require.NoError(err)
	for i, u := range uris {
		require.True(strings.HasPrefix(u, "http://127.0.0.1:"), u)
		require.NotEqual(network.ChainURIsBase()[i], u)
	}
	direct, err := client.NewRouter(uris, network.ChainID.String(), rc)
	require.NoError(err)
	// A router over the nodes' URIs whose clients find the direct API
	// themselves (client.Config.Direct).
	rc.Client.Direct = true
	learning, err := client.NewRouter(network.ChainURIsBase(), network.ChainID.String(), rc)
	require.NoError(err)
	viaNode := router(t)
	issued := map[string][][2]uint64{}
	for k := 0; k < 8; k++ {
		rk := fmt.Sprintf("direct-%d", k%2)
		for _, r := range []*client.Router{viaNode, direct, learning} {
			rep, err := r.Allocate(ctx, api.AllocateArgs{Range: rk, Count: 4, Pooled: true})
			require.NoError(err)
			require.True(rep.Pooled)
			o, err := viaNode.GetOwner(ctx, rk)
			require.NoError(err)
			require.Equal(o.Owner, rep.Owner, "answered by the owner either way")
			issued[rk] = append(issued[rk], [2]uint64{rep.Base, rep.Base + rep.Count})
		}
	}
	for rk, ivs := range issued {
		sort.Slice(ivs, func(a, b int) bool { return ivs[a][0] < ivs[b][0] })
		for k := 1; k < len(ivs); k++ {
			require.LessOrEqual(ivs[k-1][1], ivs[k][0], "range %s: ids issued twice", rk)
		}
	}
}

// TestB_PooledLoad runs pooled allocations (answered from the owners'
// committed reservations) next to ordinary ones on the same ranges: every
// id is handed out once, and every pooled id is below the committed counter.
func TestB_PooledLoad(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := router(t)
	const workers, perWorker = 32, 40
	var (
		mu    sync.Mutex
		byKey = map[string][][2]uint64{}
		wg    sync.WaitGroup
		errs  []error
	)
	began := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				rk := fmt.Sprintf("pooled-%d", (w+i)%8)
				pooled := i%10 != 0
				args := api.AllocateArgs{Range: rk, Count: 3, Pooled: pooled}
				if !pooled {
					args.Wait = api.WaitAccepted
				}
				rep, err := r.Allocate(ctx, args)
				var iv [2]uint64
				switch {
				case err != nil:
				case pooled && !rep.Pooled:
					err = fmt.Errorf("a pooled request was not answered from the pool")
				case pooled:
					iv = [2]uint64{rep.Base, rep.Base + rep.Count}
				default:
					var rc *api.ReceiptReply
					if rc, err = r.WaitForReceipt(ctx, rep.TxID); err == nil {
						e := rc.Entries[rep.Index]
						iv = [2]uint64{e.Base, e.Base + e.Count}
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					byKey[rk] = append(byKey[rk], iv)
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	require.Empty(errs)
	t.Logf("%d allocations (90%% pooled) in %s", workers*perWorker, time.Since(began).Round(time.Millisecond))
	agree(ctx, t) // the node a read goes to has accepted everything too
	for rk, ivs := range byKey {
		sort.Slice(ivs, func(a, b int) bool { return ivs[a][0] < ivs[b][0] })
		for i := 1; i < len(ivs); i++ {
			require.LessOrEqual(ivs[i-1][1], ivs[i][0], "range %s: %v overlaps %v", rk, ivs[i-1], ivs[i])
		}
		a, err := r.GetAllocation(ctx, rk)
		require.NoError(err)
		require.LessOrEqual(ivs[len(ivs)-1][1], a.Next, "range %s: every id handed out is committed", rk)
	}
}

func TestC_Manifests(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := router(t)
	bucket := ownedRanges(ctx, t, r, "objects", 1)[network.Nodes[1].NodeID][0]
	rep, err := r.Allocate(ctx, api.AllocateArgs{Range: bucket, Count: 2})
	require.NoError(err)
	rc, err := r.WaitForReceipt(ctx, rep.TxID)
	require.NoError(err)
	base := rc.Entries[rep.Index].Base
	body := []byte("0123456789abcdefghij")
	m := api.PutManifestArgs{Bucket: bucket, Key: "dir/file.bin", Size: 20, ContentHash: sha256.Sum256(body),
		Chunks: []api.Chunk{{Range: bucket, ID: base, Size: 10}, {Range: bucket, ID: base + 1, Size: 10}}}
	put, err := r.PutManifest(ctx, m)
	require.NoError(err)
	prc, err := r.WaitForReceipt(ctx, put.TxID)
	require.NoError(err)
	require.Equal(api.StatusAccepted, prc.Status)
	for _, nd := range network.Nodes {
		c := nodeClient(t, nd)
		require.NoError(poll(ctx, func() error { _, err := c.GetManifest(ctx, bucket, m.Key); return err }))
		got, err := c.GetManifest(ctx, bucket, m.Key)
		require.NoError(err)
		require.Equal(m.Chunks, got.Manifest.Chunks)
	}
	bad := m
	bad.Key = "dir/bad.bin"
	bad.Chunks = []api.Chunk{{Range: bucket, ID: base + 50_000, Size: 20}}
	bput, err := r.PutManifest(ctx, bad)
	require.NoError(err)
	brc, err := r.WaitForReceipt(ctx, bput.TxID)
	require.NoError(err, "a versioned write refuses the entry, not the transaction")
	err = client.EntryError(brc, bput.Index)
	require.ErrorIs(err, client.ErrRejected)
	rejected, _ := client.IsRejected(err)
	require.Equal("unallocated_chunk", rejected.Reason)
	_, err = r.GetManifest(ctx, bucket, bad.Key)
	require.Error(err)

	// Versioned: an exclusive create of a live object fails with its
	// version; the listing shows it; an overwrite releases the chunk it
	// drops, and the acknowledgement of its reclaim takes it off the list.
	version := prc.Entries[put.Index].Version
	require.NotZero(version)
	excl := m
	excl.Condition, excl.Wait = &api.Condition{Kind: api.IfAbsent}, api.WaitAccepted
	_, err = r.PutManifest(ctx, excl)
	require.ErrorIs(err, client.ErrPreconditionFailed)
	pf, ok := client.IsPreconditionFailed(err)
	require.True(ok)
	require.Equal(version, pf.Current)
	require.NoError(poll(ctx, func() error {
		list, err := r.ListManifests(ctx, api.ListManifestsArgs{Bucket: bucket, Prefix: "dir/", Delimiter: "/"})
		if err == nil && (len(list.Manifests) != 1 || list.Manifests[0].Manifest.Key != m.Key) {
			err = fmt.Errorf("listed %v", list.Manifests)
		}
		return err
	}))
	shrunk := m
	shrunk.Size, shrunk.Chunks, shrunk.Wait = 10, m.Chunks[:1], api.WaitAccepted
	shrunk.Condition = &api.Condition{Kind: api.IfVersion, Version: version}
	over, err := r.PutManifest(ctx, shrunk)
	require.NoError(err)
	require.Greater(over.Version, version)
	require.NoError(poll(ctx, func() error { // any node: one that lags catches up
		rel, err := r.ListReleased(ctx, api.ListReleasedArgs{Bucket: bucket})
		if err == nil && (len(rel.Released) != 1 || rel.Released[0].ID != base+1) {
			err = fmt.Errorf("released %v, want chunk %d", rel.Released, base+1)
		}
		return err
	}))
	_, err = r.Reclaim(ctx, api.ReclaimArgs{Chunks: []api.ChunkRef{{Range: bucket, ID: base + 1}}, Wait: api.WaitAccepted})
	require.NoError(err)
	require.NoError(poll(ctx, func() error {
		rel, err := r.ListReleased(ctx, api.ListReleasedArgs{Bucket: bucket})
		if err == nil && len(rel.Released) != 0 {
			err = fmt.Errorf("%d released chunks left", len(rel.Released))
		}
		return err
	}))
}

func TestD_BadInput(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	endpoint := network.ChainURI(network.Nodes[0])
	post := func(body string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		require.NoError(err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for name, body := range map[string]string{
		"wrong types":    `{"jsonrpc":"2.0","id":1,"method":"schain.allocate","params":{"range":5,"count":"x"}}`,
		"huge count":     `{"jsonrpc":"2.0","id":1,"method":"schain.allocate","params":{"range":"r","count":18446744073709551615}}`,
		"negative count": `{"jsonrpc":"2.0","id":1,"method":"schain.allocate","params":{"range":"r","count":-1}}`,
		"unknown method": `{"jsonrpc":"2.0","id":1,"method":"schain.launchMissiles","params":{}}`,
		"not json":       `{"jsonrpc":"2.0","id":1,"method":`,
		"bad range":      `{"jsonrpc":"2.0","id":1,"method":"schain.getAllocation","params":{"range":"a b"}}`,
	} {
		_, out := post(body)
		require.Contains(out, `"error"`, name)
		require.NotContains(out, `"result"`, name)
	}
	// Still serving.
	code, out := post(`{"jsonrpc":"2.0","id":1,"method":"schain.getNode","params":{}}`)
	require.Equal(http.StatusOK, code)
	require.Contains(out, `"result"`)
	_, err := nodeClient(t, network.Nodes[0]).GetNode(ctx)
	require.NoError(err)
}

// TestE_PChainHeightChange runs load while the P-chain height changes and an
// ACP-181 epoch boundary passes: ownership re-pins, and every request still
// ends accepted exactly once (through a re-signed replacement if its first
// transaction was pinned to the old P-chain height).
func TestE_PChainHeightChange(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := router(t)
	before, err := r.GetMembership(ctx)
	require.NoError(err)
	require.NoError(network.AdvancePChain(ctx))

	type sub struct {
		txID  api.ID
		index int
		rk    string
	}
	var (
		mu   sync.Mutex
		subs []sub
		wg   sync.WaitGroup
	)
	loadCtx, stopLoad := context.WithCancel(ctx)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; loadCtx.Err() == nil; i++ {
				rk := fmt.Sprintf("epoch-%02d", (w*7+i)%16)
				rep, err := r.Allocate(loadCtx, api.AllocateArgs{Range: rk, Count: 1})
				if err != nil {
					continue // NotOwner/NotReady around the boundary are retried by the router; cancellation ends the loop
				}
				mu.Lock()
				subs = append(subs, sub{rep.TxID, rep.Index, rk})
				mu.Unlock()
			}
		}(w)
	}
	var after *api.MembershipReply
	err = poll(ctx, func() error {
		after, err = r.GetMembership(ctx)
		if err != nil {
			return err
		}
		if after.PChainHeight <= before.PChainHeight {
			return fmt.Errorf("P-chain height still %d", after.PChainHeight)
		}
		return nil
	})
	stopLoad()
	wg.Wait()
	require.NoError(err, "the P-chain height never moved past %d", before.PChainHeight)
	t.Logf("P-chain height %d -> %d, %d allocations during the run", before.PChainHeight, after.PChainHeight, len(subs))
	require.NotEmpty(subs)

	type iv struct{ lo, hi uint64 }
	byRange := map[string][]iv{}
	repinned := 0
	for _, s := range subs {
		first, err := r.GetReceipt(ctx, s.txID)
		require.NoError(err)
		if first.ReplacedBy != nil {
			repinned++
		}
		rc, err := r.WaitForReceipt(ctx, s.txID)
		require.NoError(err, "request in %s lost", s.rk)
		require.Equal(api.StatusAccepted, rc.Status)
		e := rc.Entries[s.index]
		byRange[s.rk] = append(byRange[s.rk], iv{e.Base, e.Base + e.Count})
	}
	t.Logf("%d requests were re-pinned to the new P-chain height", repinned)
	for rk, ivs := range byRange {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].lo < ivs[j].lo })
		for i := 1; i < len(ivs); i++ {
			require.LessOrEqual(ivs[i-1].hi, ivs[i].lo, "overlapping ids in %s", rk)
		}
	}
	agree(ctx, t)
}

func nodeByID(id ids.NodeID) localnet.Node {
	for _, nd := range network.Nodes {
		if nd.NodeID == id {
			return nd
		}
	}
	return localnet.Node{}
}
