//go:build e2e

// Package multihost runs S-Chain beyond one machine's loopback: validators,
// SeaweedFS masters and a volume server each on a host of its own
// (network namespaces joined by a bridge, package tests/framework/hosts), a plain
// avalanchego network that no schain command started (avanet),
// S-Chain brought onto it with `schain deploy`, and faults through the
// links and the processes. Needs root; skipped with the reason elsewhere.
package operations

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/tests/framework/avanet"
	"github.com/s-chain/schain/tests/framework/hosts"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/localnet/localnettest"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/block"
	vmconfig "github.com/s-chain/schain/vm/config"
)

const (
	validators = 4
	masters    = 3
	// Host numbers: validators first, then the masters, then the volume
	// server.
	hostCount = validators + masters + 1
	// netNumber names the test's hosts (198.18.29.0/24).
	netNumber = 29
	ranges    = 12
)

// committed allocates through the router and waits for the block: the ids
// the load driver records are committed ones.
type committed struct{ r *client.Router }

func (c committed) Allocate(ctx context.Context, rangeKey string, count uint64) (uint64, uint64, error) {
	got, err := c.r.AllocateCommitted(ctx, api.AllocateArgs{Range: rangeKey, Count: count})
	if err != nil {
		return 0, 0, err
	}
	return got.Entry.Base, got.Entry.Count, nil
}

// TestHostsFaults: on 8 hosts with 2 ms ± 1 ms links (one validator's at
// 30 ms), S-Chain deployed with `schain deploy` and SeaweedFS on it take
// allocations, manifests and uploads through a partition of a validator, a
// SIGSTOP of an owner for two liveness rounds, and a stop of every node at
// once followed by a restart from disk. No id is issued twice, every
// acknowledged upload and manifest reads back, the chain resumes at the
// height and state where it stopped, and the stopped owner's ranges move.
func TestHostsFaults(t *testing.T) {
	needHosts(t)
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	build := localnettest.BuildDir()
	root := filepath.Join(build, "e2e-hosts")
	require.NoError(os.RemoveAll(root))
	require.NoError(os.MkdirAll(root, 0o755))

	net, err := hosts.New(ctx, hosts.Config{Number: netNumber, Hosts: hostCount, Seed: uint64(time.Now().UnixNano())})
	require.NoError(err)
	var an *avanet.Network
	var weed *cluster.Cluster
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer scancel()
		if weed != nil {
			if t.Failed() {
				t.Logf("SeaweedFS logs (kept in %s):\n%s", root, weed.Logs(20))
			}
			_ = weed.Stop(sctx)
		}
		if an != nil {
			if t.Failed() {
				for _, nd := range an.Nodes {
					t.Logf("---- %s (%s), logs in %s:\n%s", nd.NodeID, nd.Addr, nd.LogDir(), nd.Tail(15))
				}
			}
			_ = an.Stop(sctx)
		}
		if err := net.Close(); err != nil {
			t.Errorf("removing the hosts: %v", err)
		}
	})
	hs := net.Hosts()
	slow := hs[validators-1]
	link := hosts.Shape{Delay: 2 * time.Millisecond, Jitter: time.Millisecond, LossPPM: 1000}
	shape(t, ctx, net, link, slow, hosts.Shape{Delay: 30 * time.Millisecond, LossPPM: 1000})
	t.Logf("links: %s on every host and the machine, %s on %s (%s)", link, hosts.Shape{Delay: 30 * time.Millisecond, LossPPM: 1000}, slow.Name, slow.Addr)

	// A plain avalanchego network, then S-Chain on it.
	var places []avanet.Place
	for _, h := range hs[:validators] {
		places = append(places, avanet.Place{Addr: h.Addr, Wrap: h.Wrap()})
	}
	an, err = avanet.Create(avanet.Config{
		Dir: filepath.Join(root, "nodes"), AvalancheGo: filepath.Join(build, "avalanchego"),
		PluginDir: filepath.Join(build, "plugins"), Places: places, Progress: testWriter{t},
	})
	require.NoError(err)
	require.NoError(an.Start(ctx))
	genesis := localnet.Genesis(0, 0, 0) // 5 s rounds, K=1: failover within 10.5 s
	g, err := vmconfig.ParseGenesis(genesis)
	require.NoError(err)
	round := time.Duration(g.RoundDurationMs) * time.Millisecond
	c := deployChain(t, ctx, root, an, genesis)
	t.Logf("chain %s on subnet %s", c.record.ChainID, c.record.SubnetID)

	// SeaweedFS: three masters and a volume server, each on its own host,
	// taking file keys and volume ids from S-Chain. A new cluster records
	// its cutover floors first (nothing legacy to stay above).
	_, err = cutover.Record(ctx, c.router.Fresh(), "hosts", cutover.Plan(cutover.Bounds{}, cutover.Margins{}))
	require.NoError(err)
	wcfg := cluster.DefaultConfig(filepath.Join(build, "weed"), filepath.Join(root, "weed"), cluster.ModeSChain)
	wcfg.SChain = cluster.SChain{URIs: c.uris(), Chain: c.record.ChainID.String(), TokenFile: c.tokFile, Prefix: "hosts"}
	for _, h := range hs[validators : validators+masters] {
		wcfg.MasterHosts = append(wcfg.MasterHosts, cluster.Host{Addr: h.Addr.String(), Wrap: h.Wrap()})
	}
	wcfg.VolumeHost = &cluster.Host{Addr: hs[hostCount-1].Addr.String(), Wrap: hs[hostCount-1].Wrap()}
	wcfg.Progress = testWriter{t}
	weed, err = cluster.Start(ctx, wcfg)
	require.NoError(err)

	// The load: allocations on ranges (one client each, so that a range
	// whose owner stops holds back no other; a request gives up after 5 s,
	// as SeaweedFS's schain_request_timeout does, so that a client stuck on
	// a stopped owner tries again), manifests, uploads.
	rangeKeys := make([]string, ranges)
	for i := range rangeKeys {
		rangeKeys[i] = fmt.Sprintf("hosts-%02d", i)
	}
	alloc := benchmark.Start(ctx, benchmark.Load{
		System: committed{c.router}, Ranges: rangeKeys, Clients: ranges, Pick: benchmark.PerRange(), Count: 4, Timeout: 5 * time.Second,
	})
	man := startManifests(ctx, c.router)
	up, err := workload.New(workload.Config{
		Masters: weed.MasterAddrs(), Collection: "hosts", Workers: 4, Size: 2048, UploadTimeout: 2 * time.Minute, Retry: 200 * time.Millisecond,
	})
	require.NoError(err)
	upCtx, upStop := context.WithCancel(ctx)
	upDone := make(chan workload.Result, 1)
	go func() { upDone <- up.Run(upCtx) }()
	began := time.Now()
	waitFor(t, 2*time.Minute, "every range to allocate", func() error {
		if n := alloc.Allocating(time.Minute); n < ranges {
			return fmt.Errorf("%d of %d ranges allocated", n, ranges)
		}
		return nil
	})

	// 1. A partition: one validator's link down for longer than the
	// failover bound, then up; it catches up.
	cut := hs[1]
	t.Logf("partition: %s (%s) cut off for %v", cut.Name, cut.Addr, g.FailoverBound()+2*time.Second)
	require.NoError(cut.SetLink(ctx, false))
	time.Sleep(g.FailoverBound() + 2*time.Second) // the fault's length, not a wait for a condition
	require.NoError(cut.SetLink(ctx, true))
	c.agree(t, ctx, 2*time.Minute)
	t.Logf("partition healed; the nodes agree again")

	// 2. SIGSTOP of the owner of a range for two liveness rounds, and on
	// until its range allocated again through another owner: it must leave
	// the membership within the failover bound (K+1 rounds and the
	// heartbeat lead: more than two rounds). The bound holds while every
	// round has a block; a round can wait out the stopped validator's
	// proposer slots (docs/concepts/liveness.md, Failover bound): three are allowed.
	// Its range allocates again once its client tries the new owner: five
	// 5 s attempts more are allowed (the one in flight at the stopped
	// owner when it leaves, which answers nothing, and lookups at nodes
	// that have not accepted the move yet; measured: 16 s at most). A
	// router that kept the silent owner never moves.
	allowed := g.FailoverBound() + 3*5*time.Second
	allowedMove := allowed + 5*5*time.Second
	owner, err := c.router.GetOwner(ctx, rangeKeys[0])
	require.NoError(err)
	victim := nodeByID(an, ids.NodeID(owner.Owner))
	stoppedAt, stopped := alloc.Since(), time.Now()
	require.NoError(victim.Signal(syscall.SIGSTOP))
	t.Logf("SIGSTOP %s (%s), owner of %s", victim.NodeID, victim.Addr, rangeKeys[0])
	dropped := waitDropped(t, ctx, c, victim.NodeID, allowed)
	moved := waitUntil(allowedMove-time.Since(stopped), func() bool { return alloc.SucceededSince(0, stoppedAt) })
	time.Sleep(2*round - time.Since(stopped)) // stopped for two rounds at least (a no-op once past)
	stoppedFor := time.Since(stopped)
	require.NoError(victim.Signal(syscall.SIGCONT))
	t.Logf("SIGCONT after %v", stoppedFor.Round(time.Millisecond))
	require.Positive(dropped, "the stopped owner left the membership within %v", allowed)
	require.True(moved, "%s allocated again through another owner within %v", rangeKeys[0], allowedMove)
	c.agree(t, ctx, 2*time.Minute)

	// 3. Every node stopped at once, then restarted from disk: the chain
	// resumes at the height and state it stopped at.
	samples, _ := alloc.Stop()
	manifests := man.stop()
	atStop := recordState(t, ctx, c, rangeKeys)
	t.Logf("stopping every node at once at heights %v", atStop.heights)
	require.NoError(an.Stop(ctx))
	for _, nd := range an.Nodes {
		require.NoError(nd.Start())
	}
	require.NoError(an.WaitHealthy(ctx))
	checkResumed(t, ctx, c, rangeKeys, atStop)
	after := benchmark.Start(ctx, benchmark.Load{
		System: committed{c.router}, Ranges: rangeKeys, Clients: ranges, Pick: benchmark.PerRange(), Count: 4, Timeout: 5 * time.Second,
	})
	waitFor(t, 2*time.Minute, "every range to allocate after the restart", func() error {
		if n := after.Allocating(time.Minute); n < ranges {
			return fmt.Errorf("%d of %d ranges allocated", n, ranges)
		}
		return nil
	})
	more, _ := after.Stop()
	upStop()
	res := <-upDone
	up.Close()
	t.Logf("load ran %v", time.Since(began).Round(time.Second))

	// The checks.
	stall := rangeStall(samples, 0, stoppedAt) // samples of the first load only come before more
	samples = append(samples, more...)
	failed := 0
	for _, s := range samples {
		if s.Failed {
			failed++
		}
	}
	dups := benchmark.FindDuplicates(benchmark.Intervals(samples, false))
	require.Positive(dups.Allocations)
	require.Zero(dups.Overlapping, "ids issued twice: %+v", dups.Examples)
	t.Logf("allocations: %d committed (%d attempts failed and were retried), none overlapping", dups.Allocations, failed)

	t.Logf("SIGSTOP of %s (stopped %v): out of the membership after %v (bound %v), range %s allocated again %v after the stop, while stopped",
		victim.NodeID, stoppedFor.Round(time.Millisecond), dropped.Round(time.Millisecond), g.FailoverBound(), rangeKeys[0], stall.Round(time.Millisecond))
	require.Less(stall, stoppedFor, "the range moved while its owner was stopped")

	check := workload.Verify(ctx, res)
	t.Logf("uploads: %s", check)
	require.NoError(check.Err())
	require.Positive(check.Uploads)
	require.Equal(check.Uploads, check.ReadBack)

	require.NotEmpty(manifests)
	for _, m := range manifests {
		got, err := c.router.GetManifest(ctx, m.Bucket, m.Key)
		require.NoError(err, "manifest %s/%s", m.Bucket, m.Key)
		require.Equal(m.ContentHash, got.Manifest.ContentHash, "manifest %s/%s reads back", m.Bucket, m.Key)
	}
	t.Logf("manifests: %d acknowledged, all read back", len(manifests))
	h, blk := c.agree(t, ctx, time.Minute)
	t.Logf("every node holds block %s at height %d", blk.ID, h)
}

// manifests writes manifests in the background and keeps every one
// acknowledged (accepted).
type manifests struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	acked  []api.PutManifestArgs
}

func startManifests(ctx context.Context, r *client.Router) *manifests {
	ctx, cancel := context.WithCancel(ctx)
	m := &manifests{cancel: cancel}
	for w := range 2 {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			// A manifest names chunks of its bucket whose ids were
			// allocated.
			bucket := fmt.Sprintf("hosts-bucket-%d", w)
			chunks := bucket + "/chunks"
			for i := 0; ctx.Err() == nil; i++ {
				pause := func() {
					select {
					case <-ctx.Done():
					case <-time.After(200 * time.Millisecond):
					}
				}
				chunk, err := r.AllocateCommitted(ctx, api.AllocateArgs{Range: chunks, Count: 1})
				if err != nil {
					pause()
					continue
				}
				key := fmt.Sprintf("object-%d-%d", w, i)
				sum := ids.ID(sha256.Sum256([]byte(key)))
				args := api.PutManifestArgs{
					Bucket: bucket, Key: key, Size: 100, ContentHash: api.ID(sum),
					Chunks: []api.Chunk{{Range: chunks, ID: chunk.Entry.Base, Size: 100, Hash: api.ID(sum)}},
					Wait:   api.WaitAccepted,
				}
				// Acknowledged: accepted, as a new version of the object.
				rep, err := r.PutManifest(ctx, args)
				if err != nil || rep.Receipt == nil || rep.Receipt.Status != api.StatusAccepted || rep.Version == 0 {
					pause()
					continue
				}
				m.mu.Lock()
				m.acked = append(m.acked, args)
				m.mu.Unlock()
			}
		}()
	}
	return m
}

func (m *manifests) stop() []api.PutManifestArgs {
	m.cancel()
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acked
}

func nodeByID(an *avanet.Network, id ids.NodeID) *avanet.Node {
	for _, nd := range an.Nodes {
		if nd.NodeID == id {
			return nd
		}
	}
	panic("no node " + id.String())
}

// waitDropped watches the membership from the other nodes for up to
// limit and returns how long after now the victim was no longer a member
// (0: it stayed one). It asks each other node itself, with a short
// timeout: a read the router sent to the stopped victim would wait out the
// client's request timeout and measure that instead.
func waitDropped(t *testing.T, ctx context.Context, c *chain, victim ids.NodeID, limit time.Duration) time.Duration {
	var others []*client.Client
	for _, nd := range c.net.Nodes {
		if nd.NodeID != victim {
			others = append(others, c.node(t, nd))
		}
	}
	start := time.Now()
	if waitUntil(limit, func() bool {
		for _, cl := range others {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			m, err := cl.GetMembership(rctx)
			cancel()
			if err == nil && !isMember(m, victim) {
				return true
			}
		}
		return false
	}) {
		return time.Since(start)
	}
	return 0
}

// waitUntil polls f every 100 ms for up to limit and reports whether it
// held.
func waitUntil(limit time.Duration, f func() bool) bool {
	deadline := time.Now().Add(limit)
	for !f() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

func isMember(m *api.MembershipReply, id ids.NodeID) bool {
	for _, mb := range m.Members {
		if mb.NodeID == api.NodeID(id) {
			return true
		}
	}
	return false
}

// rangeStall is how long after at the range's first allocation that began
// after at succeeded.
func rangeStall(samples []benchmark.Sample, r int, at time.Duration) time.Duration {
	best := time.Duration(-1)
	for _, s := range samples {
		if s.Range == r && !s.Failed && s.Start >= at && (best < 0 || s.End < best) {
			best = s.End
		}
	}
	if best < 0 {
		return time.Hour
	}
	return best - at
}

// stopState is what each node had accepted when every node was stopped.
type stopState struct {
	heights []uint64
	blocks  []api.ID
	roots   []api.ID
	next    map[string]uint64
	// readAt is, per range and node, the height its counter was read at:
	// the blocks after it may still allocate (abandoned requests), and
	// a block can be accepted between the counters' reads and the
	// heights'.
	readAt map[string][]uint64
}

func recordState(t *testing.T, ctx context.Context, c *chain, rangeKeys []string) stopState {
	t.Helper()
	st := stopState{next: map[string]uint64{}, readAt: map[string][]uint64{}}
	// Every node applied every allocation (the load is stopped): a node
	// a block behind would count one as lost.
	waitFor(t, time.Minute, "every node to hold the same counters", func() error {
		for _, rk := range rangeKeys {
			var want uint64
			st.readAt[rk] = nil
			for i, nd := range c.net.Nodes {
				a, err := c.node(t, nd).GetAllocation(ctx, rk)
				if err != nil {
					return err
				}
				if i > 0 && a.Next != want {
					return fmt.Errorf("%s: %s at %d, another node at %d", nd.Addr, rk, a.Next, want)
				}
				want = a.Next
				st.readAt[rk] = append(st.readAt[rk], a.AcceptedHeight)
			}
			st.next[rk] = want
		}
		return nil
	})
	for _, nd := range c.net.Nodes {
		cl := c.node(t, nd)
		n, err := cl.GetNode(ctx)
		require.NoError(t, err)
		b, err := cl.GetBlock(ctx, n.Height)
		require.NoError(t, err)
		st.heights, st.blocks, st.roots = append(st.heights, n.Height), append(st.blocks, b.ID), append(st.roots, n.StateRoot)
	}
	return st
}

// checkResumed: each restarted node holds, at the height it had accepted
// when stopped, the same block (so the same state root), and each range's
// counter is where it was.
func checkResumed(t *testing.T, ctx context.Context, c *chain, rangeKeys []string, st stopState) {
	t.Helper()
	for i, nd := range c.net.Nodes {
		cl := c.node(t, nd)
		var n *api.NodeReply
		waitFor(t, 2*time.Minute, fmt.Sprintf("%s to serve the chain again", nd.Addr), func() error {
			var err error
			n, err = cl.GetNode(ctx)
			return err
		})
		require.GreaterOrEqual(t, n.Height, st.heights[i], "%s resumed at or above where it stopped", nd.Addr)
		b, err := cl.GetBlock(ctx, st.heights[i])
		require.NoError(t, err)
		require.Equal(t, st.blocks[i], b.ID, "%s holds the block it had accepted at height %d", nd.Addr, st.heights[i])
		if n.Height == st.heights[i] {
			require.Equal(t, st.roots[i], n.StateRoot, "%s resumed with the state root it stopped with", nd.Addr)
		}
		t.Logf("%s: stopped at height %d (root %s), resumed at %d", nd.Addr, st.heights[i], st.roots[i], n.Height)
		// Blocks come after the counters were read (heartbeats, the
		// SeaweedFS masters' allocations, and requests the load abandoned
		// when it stopped, which their owners had taken and commit
		// anyway): each counter is where it was read plus what the
		// blocks after that read allocated in its range.
		for _, rk := range rangeKeys {
			a, err := cl.GetAllocation(ctx, rk)
			require.NoError(t, err)
			want, after := st.next[rk], allocatedAfter(t, ctx, cl, st.readAt[rk][i], a.AcceptedHeight, rk)
			for _, e := range after {
				t.Logf("%s: after the counters were read, %s", nd.Addr, e)
				want = e.Base + e.Count
			}
			require.Equal(t, want, a.Next, "%s: range %s's counter is where it was, plus %d allocations after it was read", nd.Addr, rk, len(after))
		}
	}
}

// allocation is one committed allocation of a range, and the block and
// transaction that made it.
type allocation struct {
	api.ReceiptEntry
	Height uint64
	Tx     api.ID
	Owner  ids.NodeID
	Round  uint64
}

func (a allocation) String() string {
	return fmt.Sprintf("height %d: %d ids from %d in %s (tx %s of %s, round %d)", a.Height, a.Count, a.Base, a.Range, a.Tx, a.Owner, a.Round)
}

// allocatedAfter lists the allocations of rangeKey in the blocks (from,
// to], in order, from the blocks and receipts cl serves.
func allocatedAfter(t *testing.T, ctx context.Context, cl *client.Client, from, to uint64, rangeKey string) []allocation {
	t.Helper()
	var out []allocation
	require.NoError(t, localnettest.EachTx(ctx, cl, from+1, to, func(blk *block.Block, tx *txs.Tx, rc *api.ReceiptReply) {
		if _, ok := tx.Unsigned.(*txs.AllocateTx); !ok {
			return
		}
		h := tx.Unsigned.Head()
		for _, e := range rc.Entries {
			if e.Range == rangeKey {
				out = append(out, allocation{ReceiptEntry: e, Height: blk.Height, Tx: api.ID(tx.ID()), Owner: h.Owner, Round: h.Round})
			}
		}
	}))
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
