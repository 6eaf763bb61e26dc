//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
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

// partitionChain is the iptables chain holding a partition's rules; it is
// jumped to from OUTPUT (loopback traffic is filtered there) and removed
// whole on heal.
const partitionChain = "SCHAIN-PARTITION"

// connMark marks the connections the isolated node dialed to its peers.
const connMark = "0x5c"

// partition cuts one node's consensus traffic (its staking connections)
// off from every other node of the local network, both directions, while
// its HTTP API keeps answering clients. All nodes share 127.0.0.1, so ports
// alone cannot tell a connection the isolated node dialed (from an
// ephemeral port to a peer's staking port) from one between two other
// nodes: the node's process is moved into a cgroup of its own, iptables
// marks the connections it dials from then on to a peer's staking port and
// drops their packets in both directions, together with every packet to or
// from its own staking port and of the connections it had already dialed
// (a socket keeps the cgroup it was created in, so those are found by
// their ports in /proc).
type partition struct {
	cgroup string // the isolated node's cgroup directory
	root   string // the cgroup2 root it came from
	pid    int
}

// cut partitions victim. It skips the test, with the reason, where the
// machine cannot (not root, no cgroup2, no iptables with the cgroup and
// connmark matches); when running as root it installs Debian's iptables if
// missing.
func cut(t *testing.T, victim localnet.Node, peers []localnet.Node) *partition {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("partition: needs root (iptables and cgroups); run `make e2e` as root to include it")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		if _, err := exec.LookPath("apt-get"); err != nil {
			t.Skip("partition: iptables is missing and apt-get is not available to install it")
		}
		t.Log("partition: installing iptables from Debian's packages")
		out, err := exec.Command("sh", "-c", "apt-get install -y -qq --no-install-recommends iptables || (apt-get update -qq && apt-get install -y -qq --no-install-recommends iptables)").CombinedOutput()
		if err != nil {
			t.Skipf("partition: installing iptables failed: %v\n%s", err, out)
		}
	}
	root, err := cgroup2Root()
	if err != nil {
		t.Skipf("partition: %v", err)
	}
	heal() // rules left by an interrupted run
	p := &partition{cgroup: filepath.Join(root, "schain-partition"), root: root, pid: victim.PID}
	if err := os.MkdirAll(p.cgroup, 0o755); err != nil {
		t.Skipf("partition: creating a cgroup: %v", err)
	}
	var ports []string
	for _, nd := range peers {
		ports = append(ports, strconv.Itoa(int(nd.StakingPort)))
	}
	own := strconv.Itoa(int(victim.StakingPort))
	rules := [][]string{
		{"-N", partitionChain},
		{"-A", partitionChain, "-p", "tcp", "--dport", own, "-j", "DROP"},
		{"-A", partitionChain, "-p", "tcp", "--sport", own, "-j", "DROP"},
		{"-A", partitionChain, "-m", "cgroup", "--path", "schain-partition", "-p", "tcp", "-m", "multiport", "--dports", strings.Join(ports, ","), "-j", "CONNMARK", "--set-mark", connMark},
		{"-A", partitionChain, "-m", "connmark", "--mark", connMark, "-j", "DROP"},
	}
	// The cgroup first, then the connections it had dialed before: one it
	// dials in between is created in the cgroup and caught by the mark.
	if err := os.WriteFile(filepath.Join(p.cgroup, "cgroup.procs"), []byte(strconv.Itoa(p.pid)), 0o644); err != nil {
		p.heal(t)
		t.Skipf("partition: moving pid %d into %s: %v", p.pid, p.cgroup, err)
	}
	dialed, err := dialedPorts(p.pid, peers)
	if err != nil {
		p.heal(t)
		t.Skipf("partition: finding the connections pid %d dialed: %v", p.pid, err)
	}
	for _, port := range dialed {
		eph := strconv.Itoa(int(port))
		rules = append(rules,
			[]string{"-A", partitionChain, "-p", "tcp", "--sport", eph, "-j", "DROP"},
			[]string{"-A", partitionChain, "-p", "tcp", "--dport", eph, "-j", "DROP"})
	}
	rules = append(rules, []string{"-I", "OUTPUT", "-j", partitionChain})
	t.Logf("partition: %s cut off (staking port %s, %d connections it had dialed)", victim.NodeID, own, len(dialed))
	for _, r := range rules {
		if out, err := exec.Command("iptables", r...).CombinedOutput(); err != nil {
			heal()
			t.Skipf("partition: iptables %s: %v: %s (the kernel may lack the cgroup or connmark match)", strings.Join(r, " "), err, out)
		}
	}
	t.Cleanup(func() { p.heal(t) })
	return p
}

// dialedPorts returns the local ports of pid's TCP connections to a peer's
// staking port: the sockets of pid (its /proc/<pid>/fd links) matched by
// inode against /proc/net/tcp.
func dialedPorts(pid int, peers []localnet.Node) ([]uint16, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	peerPort := map[uint64]bool{}
	for _, nd := range peers {
		peerPort[uint64(nd.StakingPort)] = true
	}
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return nil, err
	}
	var out []uint16
	for _, line := range strings.Split(string(b), "\n")[1:] {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(line)
		if len(f) < 10 || !inodes[f[9]] {
			continue
		}
		local, remote := strings.Split(f[1], ":"), strings.Split(f[2], ":")
		if len(local) != 2 || len(remote) != 2 {
			continue
		}
		lp, err1 := strconv.ParseUint(local[1], 16, 16)
		rp, err2 := strconv.ParseUint(remote[1], 16, 16)
		if err1 == nil && err2 == nil && peerPort[rp] {
			out = append(out, uint16(lp))
		}
	}
	return out, nil
}

// heal removes the rules and returns the node to its cgroup; it is
// idempotent.
func (p *partition) heal(t *testing.T) {
	heal()
	_ = os.WriteFile(filepath.Join(p.root, "cgroup.procs"), []byte(strconv.Itoa(p.pid)), 0o644)
	if err := os.Remove(p.cgroup); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Logf("partition: removing %s: %v", p.cgroup, err)
	}
}

func heal() {
	_ = exec.Command("iptables", "-D", "OUTPUT", "-j", partitionChain).Run()
	_ = exec.Command("iptables", "-F", partitionChain).Run()
	_ = exec.Command("iptables", "-X", partitionChain).Run()
}

// cgroup2Root finds where the cgroup2 hierarchy is mounted.
func cgroup2Root() (string, error) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 2 && fields[2] == "cgroup2" {
			return fields[1], nil
		}
	}
	return "", errors.New("no cgroup2 hierarchy is mounted")
}

// TestX_Partition cuts one owner off from the other validators while
// clients keep writing on both sides, then heals. The isolated node takes
// writes it cannot commit and accepts no block; the majority's ranges keep
// allocating and the isolated owner's ranges move to the majority within
// K+1 liveness rounds; after healing every node agrees on the chain, the
// isolated node's pending writes are never applied, it rejoins the
// membership, and no id of the whole run was issued twice.
func TestX_Partition(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	victim := network.Nodes[len(network.Nodes)-1]
	var majority []localnet.Node
	for _, nd := range network.Nodes {
		if nd.NodeID != victim.NodeID {
			majority = append(majority, nd)
		}
	}
	all := router(t)
	owned := ownedRanges(ctx, t, all, "part", 2)
	isolatedRanges := owned[victim.NodeID]
	var liveRanges []string
	for _, nd := range majority {
		liveRanges = append(liveRanges, owned[nd.NodeID][0])
	}
	cfg := client.DefaultRouterConfig()
	cfg.Client.Token = network.Token
	var uris []string
	for _, nd := range majority {
		uris = append(uris, nd.URI)
	}
	side, err := client.NewRouter(uris, network.ChainID.String(), cfg)
	require.NoError(err)

	var (
		mu     sync.Mutex
		issued = map[string][][2]uint64{}
	)
	record := func(rc *api.ReceiptReply) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range rc.Entries {
			issued[e.Range] = append(issued[e.Range], [2]uint64{e.Base, e.Base + e.Count})
		}
	}
	allocate := func(ctx context.Context, r *client.Router, rk string) (ids.NodeID, error) {
		c, err := r.AllocateCommitted(ctx, api.AllocateArgs{Range: rk, Count: 3})
		if err != nil {
			return ids.EmptyNodeID, err
		}
		record(c.Receipt)
		return ids.NodeID(c.Reply.Owner), nil
	}
	for _, rk := range append(isolatedRanges, liveRanges...) {
		_, err := allocate(ctx, all, rk)
		require.NoError(err)
	}

	p := cut(t, victim, majority)
	cutAt := time.Now()
	isolated := nodeClient(t, victim)
	// Whatever was in flight at the cut settles; from then on the isolated
	// node's height must not move.
	var frozen uint64
	require.NoError(poll(ctx, func() error {
		info, err := isolated.GetNode(ctx)
		if err != nil {
			return err
		}
		if info.Height != frozen || time.Since(cutAt) < 3*time.Second {
			frozen = info.Height
			return errors.New("settling")
		}
		return nil
	}))

	// The minority side: the isolated owner keeps taking writes.
	var minorityTxs []api.ID
	minority, stopMinority := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for minority.Err() == nil {
			short, cancelShort := context.WithTimeout(minority, 2*time.Second)
			rep, err := isolated.Allocate(short, api.AllocateArgs{Range: isolatedRanges[0], Count: 5})
			cancelShort()
			if err == nil {
				mu.Lock()
				minorityTxs = append(minorityTxs, rep.TxID)
				mu.Unlock()
			}
			select {
			case <-minority.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()

	// The majority side: live owners' ranges keep allocating, and the
	// isolated owner's move to the majority within K+1 rounds.
	for _, rk := range liveRanges {
		_, err := allocate(ctx, side, rk)
		require.NoError(err, "a live owner's range during the partition")
	}
	// The bound is the test's deadline, not the failover target (that is
	// measured by schain bench): the move took 30-56 s on the shared
	// 2-core machine, beyond the (K+1) rounds of the rule, because the
	// blocks it needs wait out the isolated validator's proposer slots
	// (failoverDeadline).
	bound := failoverDeadline()
	within, cancelWithin := context.WithDeadline(ctx, cutAt.Add(bound))
	defer cancelWithin()
	for _, rk := range isolatedRanges {
		var owner ids.NodeID
		require.NoError(poll(within, func() error {
			short, cancelShort := context.WithTimeout(within, 5*time.Second)
			defer cancelShort()
			var err error
			owner, err = allocate(short, side, rk)
			return err
		}), "range %s of the isolated owner never moved", rk)
		require.NotEqual(victim.NodeID, owner)
		t.Logf("range %s allocates through %s, %s after the cut", rk, owner, time.Since(cutAt).Round(time.Second))
	}
	info, err := isolated.GetNode(ctx)
	require.NoError(err)
	require.Equal(frozen, info.Height, "the isolated node accepted a block")
	stopMinority()
	wg.Wait()
	mu.Lock()
	pending := len(minorityTxs)
	mu.Unlock()
	require.Positive(pending, "the isolated node took writes")

	p.heal(t)
	healed := time.Now()
	agree(ctx, t)
	t.Logf("every node agrees %s after healing", time.Since(healed).Round(time.Second))
	// The isolated node's writes were signed against a membership the
	// chain left behind: none is ever applied.
	for _, id := range minorityTxs {
		for _, nd := range network.Nodes {
			rc, err := nodeClient(t, nd).GetReceipt(ctx, id)
			require.NoError(err)
			require.NotEqual(api.StatusAccepted, rc.Status, "%s applied a write the isolated node took", nd.NodeID)
		}
	}
	// It heartbeats again and rejoins the membership.
	back, cancelBack := context.WithDeadline(ctx, healed.Add(bound))
	defer cancelBack()
	require.NoError(poll(back, func() error {
		ep, err := nodeClient(t, majority[0]).GetMembership(ctx)
		if err != nil {
			return err
		}
		for _, v := range ep.Validators {
			if ids.NodeID(v.NodeID) == victim.NodeID && !v.Member {
				return errors.New("not a member yet")
			}
		}
		return nil
	}))
	t.Logf("the isolated node is a member again %s after healing", time.Since(healed).Round(time.Second))
	for rk, ivs := range issued {
		sort.Slice(ivs, func(a, b int) bool { return ivs[a][0] < ivs[b][0] })
		for i := 1; i < len(ivs); i++ {
			require.LessOrEqual(ivs[i-1][1], ivs[i][0], "range %s: %v overlaps %v", rk, ivs[i-1], ivs[i])
		}
		for _, nd := range network.Nodes {
			require.NoError(poll(ctx, func() error {
				a, err := nodeClient(t, nd).GetAllocation(ctx, rk)
				if err == nil && a.Next < ivs[len(ivs)-1][1] {
					err = fmt.Errorf("range %s on %s: at %d, the last allocation ends at %d", rk, nd.NodeID, a.Next, ivs[len(ivs)-1][1])
				}
				return err
			}))
		}
	}
}
