//go:build e2e

package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/stretchr/testify/require"

	platformapi "github.com/ava-labs/avalanchego/vms/platformvm/api"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/certificate"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/operator/eviction"
	"github.com/s-chain/schain/operator/subnet"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/block"
)

// Faults in which one node lags behind the chain while its API answers
// (issue 30): its chain process paused, or the node restarted from an old
// copy of its database. No key is issued twice, no live validator is
// removed, and no stale answer is taken as current.

// pluginOf is the pid of a node's chain process: its child running
// S-Chain's plugin.
func pluginOf(t *testing.T, nd localnet.Node) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(nd.PID) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), vm.ID.String()) {
			return pid
		}
	}
	t.Fatalf("no S-Chain plugin process under node %s (pid %d)", nd.NodeID, nd.PID)
	return 0
}

// maxPause bounds a pause: avalanchego pings a chain's plugin over gRPC
// after 30 s without traffic and shuts the chain down when no answer comes
// within 10 s (rpcchainvm's client keepalive), so a longer stop is a
// crash, not a lag.
const maxPause = 20 * time.Second

// pause stops a node's chain process (SIGSTOP): the node, its P-chain and
// its HTTP server keep running, S-Chain's engine and API stall. It
// returns the resume, which the test's cleanup also runs, and which runs
// by itself after maxPause.
func pause(t *testing.T, nd localnet.Node) func() {
	t.Helper()
	pid := pluginOf(t, nd)
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	var once sync.Once
	cont := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	resume := func() { once.Do(cont) }
	timer := time.AfterFunc(maxPause, func() {
		once.Do(func() {
			t.Logf("resumed %s after %v: the longest pause avalanchego survives", nd.NodeID, maxPause)
			cont()
		})
	})
	t.Cleanup(func() { timer.Stop(); resume() })
	t.Logf("paused the chain process of %s (pid %d)", nd.NodeID, pid)
	return resume
}

// lagPrefix finds a SeaweedFS range prefix none of whose ranges (a key
// band, the volumes, the floors) the victim owns: the victim may lag, and
// writes wait for their owner.
func lagPrefix(ctx context.Context, t *testing.T, r *client.Router, victim ids.NodeID) string {
	t.Helper()
	for k := 0; ; k++ {
		pfx := fmt.Sprintf("lag%d-%d", time.Now().Unix()%100000, k)
		clear := true
		for _, rk := range []string{schainseq.KeyRange(pfx, 0, 1), schainseq.VolumeRange(pfx), schainseq.KeyFloorRange(pfx), schainseq.VolumeFloorRange(pfx)} {
			o, err := r.GetOwner(ctx, rk)
			require.NoError(t, err)
			clear = clear && o.Owner != api.NodeID(victim)
		}
		if clear {
			return pfx
		}
	}
}

// committed allocates and waits until the ids are accepted.
func committed(ctx context.Context, t *testing.T, r *client.Router, rk string, count uint64) *client.Committed {
	t.Helper()
	c, err := r.AllocateCommitted(ctx, api.AllocateArgs{Range: rk, Count: count})
	require.NoError(t, err)
	return c
}

// freshWatch makes dry-run passes of the eviction policy through fresh
// reads until stopped, and fails the test if one would remove a validator
// other than the one allowed (the paused node, legitimately out). The
// returned stop (also the test's cleanup) ends it and returns the passes.
func freshWatch(ctx context.Context, t *testing.T, r *client.Router, allowed ids.NodeID) func() int {
	key, err := network.OwnerKey()
	require.NoError(t, err)
	w := &eviction.Watcher{
		Policy: eviction.Policy{After: 1, MinValidators: 2}, Memberships: r.Fresh(),
		Subnet: subnet.NewAdmin(network.Nodes[0].URI, network.SubnetID, key), DryRun: true,
	}
	ctx, cancel := context.WithCancel(ctx)
	passes := make(chan int, 1)
	go func() {
		n := 0
		defer func() { passes <- n }()
		for ctx.Err() == nil {
			out, err := w.Pass(ctx)
			if err == nil {
				n++
			}
			if out != nil && out.Decision.Remove() && out.Decision.NodeID != allowed {
				t.Errorf("the watcher would remove %s, a live validator: %s", out.Decision.NodeID, out.Decision.Reason)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	var (
		once sync.Once
		n    int
	)
	stop := func() int {
		once.Do(func() { cancel(); n = <-passes })
		return n
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestL_PausedNode pauses one validator's chain process while the others
// reserve a million keys: the rollback's bounds, the cutover's floors and
// the eviction watcher read through fresh reads, which wait a moment for
// the paused node and do without it; the watcher never plans to remove a
// live validator. Resumed, the node answers from old state for a moment
// before it knows it lags: fresh reads never take such an answer, and
// `schain verify` through it still proves what is final.
func TestL_PausedNode(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	r := router(t)
	victim := network.Nodes[1]
	pfx := lagPrefix(ctx, t, r, victim.NodeID)
	keys := schainseq.KeyRange(pfx, 0, 1)
	committed(ctx, t, r, schainseq.VolumeRange(pfx), 1)
	committed(ctx, t, r, keys, 99)
	_, err := cutover.Record(ctx, r.Fresh(), pfx, cutover.Floors{FileKey: 10, VolumeID: 1})
	require.NoError(err)

	stopWatch := freshWatch(ctx, t, r, victim.NodeID)
	resume := pause(t, victim)
	var last *client.Committed
	for range 3 {
		last = committed(ctx, t, r, keys, 1<<20)
	}
	want := uint64(99 + 3<<20)

	// While it is paused: the rollback's bounds and the cutover's floors.
	start := time.Now()
	b, err := cutover.SChainBounds(ctx, r.Fresh(), pfx, 1, nil)
	require.NoError(err)
	require.Equal(want-1, b.MaxFileKey, "the rollback's bound covers every reserved key")
	floors, err := cutover.Record(ctx, r.Fresh(), pfx, cutover.Floors{FileKey: 20, VolumeID: 1})
	require.NoError(err)
	require.Equal(uint64(20), floors.FileKey)
	t.Logf("rollback bounds and cutover floors with a paused node: %v", time.Since(start).Round(time.Millisecond))

	// Resumed: what it answers alone, and what fresh reads take.
	resume()
	resumed := time.Now()
	lone := nodeClient(t, victim)
	var stale, refused int
	fresh := r.Fresh()
	var newest uint64
	for caughtUp := false; !caughtUp && time.Since(resumed) < 30*time.Second; time.Sleep(50 * time.Millisecond) {
		a, err := lone.GetAllocation(ctx, keys)
		switch {
		case client.IsNotReady(err):
			refused++
		case err == nil && a.Next < want:
			stale++
		case err == nil:
			caughtUp = true
		}
		if f, err := fresh.GetAllocation(ctx, keys); err == nil {
			require.Equal(want, f.Next, "a fresh read took a stale answer")
		}
		if m, err := fresh.GetMembership(ctx); err == nil {
			require.GreaterOrEqual(m.AcceptedHeight, newest, "fresh reads went back in time")
			newest = m.AcceptedHeight
		}
	}
	t.Logf("after the resume, the paused node alone answered %d stale and %d NotReady reads before it caught up", stale, refused)

	// A proof through the resumed node (first) still checks out.
	code, out, errOut := schainCLI(ctx, t, []string{victim.URI, network.Nodes[0].URI}, "verify", last.Receipt.TxID.String(), "--wait")
	require.Equal(0, code, "schain verify: %s %s", out, errOut)

	require.Positive(stopWatch(), "the watcher made passes")
	wholeMembership(ctx, t)
}

// directURIs are the direct API addresses a node's chain log announced,
// oldest first ("serving the API directly"): the plugin's own listener,
// which avalanchego's HTTP server does not guard while the chain
// bootstraps (it answers 503 for the node's own route).
func directURIs(t *testing.T, dataDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "logs", network.ChainID.String()+".log"))
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if _, rest, ok := strings.Cut(line, "serving the API directly"); ok {
			if _, uri, ok := strings.Cut(rest, `"uri": "`); ok {
				uri, _, _ = strings.Cut(uri, `"`)
				out = append(out, strings.TrimSuffix(uri, "/ext/bc/"+network.ChainID.String()))
			}
		}
	}
	return out
}

// TestM_RestoredDatabase restores one node from a copy of its database
// taken a reservation of 2^20 keys and some hundred blocks ago, and
// restarts it: while avalanchego bootstraps it, its API (the plugin's own,
// which the node's HTTP server does not guard) answers NotReady
// (bootstrapping), never the old counter, and fresh reads never go back.
func TestM_RestoredDatabase(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	r := router(t)
	victim := network.Nodes[2]
	pfx := lagPrefix(ctx, t, r, victim.NodeID)
	keys, other := schainseq.KeyRange(pfx, 0, 1), schainseq.KeyRange(pfx, 1, 1)
	committed(ctx, t, r, keys, 3)
	agree(ctx, t)

	dir, err := network.DataDir(victim.NodeID)
	require.NoError(err)
	db, backup := filepath.Join(dir, "db"), filepath.Join(t.TempDir(), "db")
	require.NoError(network.StopNode(ctx, victim.NodeID))
	require.NoError(exec.CommandContext(ctx, "cp", "-a", db, backup).Run())
	require.NoError(network.StartNode(ctx, victim.NodeID))
	committed(ctx, t, r, keys, 1<<20)
	const want = 3 + 1<<20
	// Blocks the restored node has to fetch and execute again: its
	// bootstrapping lasts long enough to be seen.
	for i := range 150 {
		committed(ctx, t, r, other, uint64(i+1))
	}
	agree(ctx, t)

	require.NoError(network.StopNode(ctx, victim.NodeID))
	require.NoError(os.RemoveAll(db))
	require.NoError(exec.CommandContext(ctx, "cp", "-a", backup, db).Run())
	announced := len(directURIs(t, dir))

	// From before the restart until it agrees with the others: every
	// answer of the restored node is NotReady or the current counter, and
	// so is every fresh read.
	watch, stopWatching := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var answers, notReady, freshReads int
	wg.Add(2)
	go func() {
		defer wg.Done()
		var lone *client.Client
		for watch.Err() == nil {
			if uris := directURIs(t, dir); lone == nil && len(uris) > announced {
				c, err := client.New(uris[len(uris)-1], network.ChainID.String(), client.DefaultConfig())
				if err != nil {
					t.Errorf("the restored node's direct API: %v", err)
					return
				}
				lone = c
			}
			if lone != nil {
				a, err := lone.GetAllocation(watch, keys)
				switch {
				case err == nil:
					answers++
					if a.Next != want {
						t.Errorf("the restored node answered %s's counter %d from its old database (current: %d)", keys, a.Next, want)
					}
				case client.IsNotReady(err):
					notReady++
				}
			}
			select {
			case <-watch.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer wg.Done()
		for watch.Err() == nil {
			if f, err := r.Fresh().GetAllocation(watch, keys); err == nil {
				freshReads++
				if f.Next != want {
					t.Errorf("a fresh read answered %d, current %d", f.Next, want)
				}
			}
		}
	}()
	t.Cleanup(func() { stopWatching(); wg.Wait() })
	require.NoError(network.StartNode(ctx, victim.NodeID))
	agree(ctx, t)
	stopWatching()
	wg.Wait()
	t.Logf("while restarting from the old database: its direct API answered %d reads and %d NotReady; %d fresh reads", answers, notReady, freshReads)
	require.Positive(notReady, "the restored node said it was bootstrapping")
	require.Positive(answers, "and answered once bootstrapped")
	wholeMembership(ctx, t)
}

// TestN_ForgedEarlyCertificate: subnet validators join one transaction at
// a time, so at the P-chain heights before the last joined, fewer of them
// hold all of the subnet's stake. Those sign an invented block of this
// chain at such a height, and an S-Chain node that lies serves it: `schain
// verify`, taking the validator set from a real P-chain, refuses it
// (issue 30, finding 6), because the chain was created later.
func TestN_ForgedEarlyCertificate(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := subnet.NewNode(network.Nodes[0].URI)
	created, err := subnet.ChainCreatedAt(ctx, node, network.ChainID, mustHeight(ctx, t, node), 0)
	require.NoError(err)
	whole, err := node.GetValidatorsAt(ctx, network.SubnetID, platformHeight(created))
	require.NoError(err)
	var (
		early uint64
		set   certificate.ValidatorSet
	)
	for h := created - 1; h > 0 && early == 0; h-- {
		vals, err := node.GetValidatorsAt(ctx, network.SubnetID, platformHeight(h))
		require.NoError(err)
		if len(vals) > 0 && len(vals) < len(whole) {
			early, set = h, certificate.NewValidatorSet(network.SubnetID, h, vals)
		}
	}
	if early == 0 {
		t.Skipf("every subnet validator joined at once, before the chain's creation at %d", created)
	}
	t.Logf("chain created at P-chain height %d with %d validators; at %d, %d held all of the stake", created, len(whole), early, len(set.Validators))
	liar := forgedNode(t, set)

	code, out, errOut := schainCLI(ctx, t, []string{liar}, "verify", "--height", "1", "--pchain", network.Nodes[0].URI)
	require.Equal(9, code, "schain verify: %s %s", out, errOut)
	require.Contains(errOut, "before_chain")

	// The same forgery with a creation height an operator got wrong: it
	// is signed by every validator of its height, which verify accepted
	// before it bounded heights.
	code, _, errOut = schainCLI(ctx, t, []string{liar}, "verify", "--height", "1", "--pchain", network.Nodes[0].URI, "--chain-created-at", strconv.FormatUint(early, 10))
	require.Equal(0, code, "the bound is what refuses it: %s", errOut)
}

// errNoForgery marks a forged node's refusal of what it does not serve.
var errNoForgery = errors.New("not forged")

func mustHeight(ctx context.Context, t *testing.T, node subnet.Node) uint64 {
	h, err := node.GetHeight(ctx)
	require.NoError(t, err)
	return h
}

func platformHeight(h uint64) platformapi.Height { return platformapi.Height(h) }

// forgedNode serves, as an S-Chain node of this chain would, an invented
// block at height 1 and its certificate, signed at the set's P-chain height
// by every validator of the set. It returns its URI.
func forgedNode(t *testing.T, set certificate.ValidatorSet) string {
	t.Helper()
	ctx := context.Background()
	networkID, err := subnet.NewNode(network.Nodes[0].URI).GetNetworkID(ctx)
	require.NoError(t, err)
	blk, err := block.New(ids.ID{'n', 'o', 'n', 'e'}, 1, uint64(time.Now().UnixMilli()), true, set.PChainHeight, ids.ID{'f', 'o', 'r', 'g', 'e', 'd'}, nil, block.DefaultLimits())
	require.NoError(t, err)
	st := certificate.Statement{NetworkID: networkID, ChainID: network.ChainID, Height: 1, BlockID: blk.ID(), StateRoot: blk.StateRoot, PChainHeight: set.PChainHeight}
	msg, err := st.Message()
	require.NoError(t, err)
	canonical, err := set.Canonical()
	require.NoError(t, err)
	sigs := map[int]*bls.Signature{}
	for i, v := range canonical.Validators {
		key, err := network.SignerKey(v.NodeIDs[0])
		require.NoError(t, err)
		raw, err := warp.NewSigner(key, networkID, network.ChainID).Sign(msg)
		require.NoError(t, err)
		if sigs[i], err = bls.SignatureFromBytes(raw); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := certificate.Aggregate(st, sigs)
	require.NoError(t, err)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
			ID     uint64 `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		head := api.Head{AcceptedHeight: 1, AcceptedID: api.ID(blk.ID())}
		var result any
		switch req.Method {
		case "schain.getNode":
			result = api.NodeReply{Head: head, NodeID: api.NodeID(ids.GenerateTestNodeID()), NetworkID: networkID, ChainID: api.ID(network.ChainID), Height: 1, StateRoot: api.ID(blk.StateRoot)}
		case "schain.getCertificate":
			result = api.CertificateReply{Head: head, Height: 1, Certificate: cert.API()}
		case "schain.getBlock":
			result = api.BlockReply{Head: head, Height: 1, ID: api.ID(blk.ID()), Bytes: "0x" + hex.EncodeToString(blk.Bytes())}
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": errNoForgery.Error()}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
