// Package legacyrafttest runs an N-node legacyraft cluster in one process for
// tests: raft over InmemTransport with partitions, in-memory stores that
// survive a kill (like a disk), and each node's HTTP API on 127.0.0.1.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package legacyrafttest

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

// WaitTimeout bounds every wait of the helper; elections on a loaded 2-core
// machine under -race take well under a second, this leaves ample slack.
const WaitTimeout = 20 * time.Second

// pollInterval is how often conditions are re-checked.
const pollInterval = 5 * time.Millisecond

// link identifies one directed raft connection of one group.
type link struct{ from, to, group int }

// Cluster is an in-process cluster. Methods must be called from the test
// goroutine; nodes themselves are safe for concurrent use.
type Cluster struct {
	t       testing.TB
	configs []legacyraft.Config

	mu         sync.Mutex
	nodes      []*legacyraft.Node       // guarded by mu; nil while killed
	servers    []*http.Server           // guarded by mu
	transports [][]*raft.InmemTransport // guarded by mu; [node][group]
	stores     [][]*legacyraft.Stores   // guarded by mu; kept across kills
	cut        map[link]bool            // guarded by mu
}

// FastConfig returns a node configuration with timings suited to tests: fast
// elections, no warm-up, short forwarding timeout.
func FastConfig() legacyraft.Config {
	c := legacyraft.DefaultConfig()
	c.HeartbeatTimeout = 150 * time.Millisecond
	c.ElectionTimeout = 150 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.WarmUp = 0
	c.ForwardTimeout = time.Second
	c.ApplyTimeout = 2 * time.Second
	return c
}

// Start builds n nodes from base (ID, addresses and peers are filled in),
// starts them, and registers cleanup. Raft addresses are inmem names only.
func Start(t testing.TB, n int, base legacyraft.Config) *Cluster {
	c := &Cluster{t: t, cut: make(map[link]bool)}
	listeners := make([]net.Listener, n)
	var peers []legacyraft.Peer
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		listeners[i] = ln
		peers = append(peers, legacyraft.Peer{
			ID:       fmt.Sprintf("n%d", i),
			RaftAddr: fmt.Sprintf("127.0.0.1:%d", 20000+i*legacyraft.SlotCount),
			HTTPAddr: ln.Addr().String(),
		})
	}
	groups := base.GroupCount()
	for i := range n {
		cfg := base
		cfg.ID, cfg.Bind, cfg.HTTPBind, cfg.Peers = peers[i].ID, peers[i].RaftAddr, peers[i].HTTPAddr, peers
		c.configs = append(c.configs, cfg)
		c.stores = append(c.stores, make([]*legacyraft.Stores, groups))
		c.transports = append(c.transports, make([]*raft.InmemTransport, groups))
	}
	c.nodes = make([]*legacyraft.Node, n)
	c.servers = make([]*http.Server, n)
	t.Cleanup(c.close)
	for i := range n {
		c.start(i, listeners[i])
	}
	return c
}

// Size is the number of nodes, live or killed.
func (c *Cluster) Size() int { return len(c.configs) }

// Node returns node i, or nil while it is killed.
func (c *Cluster) Node(i int) *legacyraft.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Addrs returns every node's HTTP API address.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, cfg := range c.configs {
		out = append(out, cfg.HTTPBind)
	}
	return out
}

// Client returns an HTTP client over all nodes.
func (c *Cluster) Client() *legacyraft.Client {
	return legacyraft.NewClient(c.Addrs(), 5*time.Second)
}

// WaitLeader waits until the live nodes agree on one leader of group g that
// is itself live and leading, and returns its index.
func (c *Cluster) WaitLeader(g int) int {
	leader := -1
	c.Eventually(func() bool {
		leader = c.leaderOf(g)
		return leader >= 0
	}, "no agreed leader of group %d", g)
	return leader
}

// WaitNoLeader waits until no live node believes it leads group g.
func (c *Cluster) WaitNoLeader(g int) {
	c.Eventually(func() bool {
		for _, n := range c.live() {
			if n.IsLeader(g) {
				return false
			}
		}
		return true
	}, "group %d still has a leader", g)
}

func (c *Cluster) leaderOf(g int) int {
	leader := -1
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range c.nodes {
		if n == nil || c.isolated(i, g) {
			continue
		}
		st := n.Status().Groups[g]
		if st.Leader == "" || (leader >= 0 && c.configs[leader].ID != st.Leader) {
			return -1
		}
		if leader < 0 {
			leader = c.index(st.Leader)
		}
	}
	if leader < 0 || c.nodes[leader] == nil || !c.nodes[leader].IsLeader(g) {
		return -1
	}
	return leader
}

// Eventually polls cond until it holds or WaitTimeout passes.
func (c *Cluster) Eventually(cond func() bool, msg string, args ...any) {
	c.t.Helper()
	require.Eventually(c.t, cond, WaitTimeout, pollInterval, append([]any{msg}, args...)...)
}

// Kill stops node i abruptly: HTTP off, raft shut down, links cut. Its
// stores are kept for Restart.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	n, srv := c.nodes[i], c.servers[i]
	c.nodes[i], c.servers[i] = nil, nil
	for g := range c.transports[i] {
		c.disconnectLocked(i, g)
		c.transports[i][g] = nil
	}
	c.mu.Unlock()
	require.NotNil(c.t, n, "node %d already killed", i)
	_ = srv.Close()
	require.NoError(c.t, n.Close())
}

// StopHTTP closes node i's API server while its raft keeps running, so
// forwarding to it fails although it still leads.
func (c *Cluster) StopHTTP(i int) {
	c.mu.Lock()
	srv := c.servers[i]
	c.servers[i] = &http.Server{}
	c.mu.Unlock()
	require.NoError(c.t, srv.Close())
}

// Restart starts a killed node again on its old stores and addresses.
func (c *Cluster) Restart(i int) {
	var ln net.Listener
	c.Eventually(func() bool {
		var err error
		ln, err = net.Listen("tcp", c.configs[i].HTTPBind)
		return err == nil
	}, "rebind %s", c.configs[i].HTTPBind)
	c.start(i, ln)
}

// IsolateGroup cuts every raft link of group g, in both directions, so the
// group can neither keep nor elect a leader. Other groups are untouched.
func (c *Cluster) IsolateGroup(g int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for a := range c.configs {
		for b := range c.configs {
			if a != b {
				c.cut[link{a, b, g}] = true
			}
		}
		c.disconnectLocked(a, g)
	}
}

// IsolateNode cuts node i from every other node in every group.
func (c *Cluster) IsolateNode(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for g := range c.transports[i] {
		for b := range c.configs {
			if b != i {
				c.cut[link{i, b, g}], c.cut[link{b, i, g}] = true, true
			}
		}
		c.disconnectLocked(i, g)
	}
}

// Heal restores every link between live nodes.
func (c *Cluster) Heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.cut)
	for i := range c.nodes {
		if c.nodes[i] != nil {
			for g := range c.transports[i] {
				c.connectLocked(i, g)
			}
		}
	}
}

func (c *Cluster) start(i int, ln net.Listener) {
	opts := legacyraft.Options{
		Transport: func(g int, addr raft.ServerAddress) (raft.Transport, error) {
			_, tr := raft.NewInmemTransport(addr)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.transports[i][g] = tr
			c.connectLocked(i, g)
			return tr, nil
		},
		Stores: func(g int) (legacyraft.Stores, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.stores[i][g] == nil {
				logs := raft.NewInmemStore()
				c.stores[i][g] = &legacyraft.Stores{Logs: logs, Stable: logs, Snaps: raft.NewInmemSnapshotStore()}
			}
			return *c.stores[i][g], nil
		},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Off}),
	}
	n, err := legacyraft.New(c.configs[i], opts)
	if err != nil {
		_ = ln.Close()
	}
	require.NoError(c.t, err)
	srv := &http.Server{Handler: n.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	c.mu.Lock()
	c.nodes[i], c.servers[i] = n, srv
	c.mu.Unlock()
}

// connectLocked links node i's group g transport with every live peer whose
// link is not cut.
func (c *Cluster) connectLocked(i, g int) {
	ti := c.transports[i][g]
	if ti == nil {
		return
	}
	for j := range c.configs {
		tj := c.transports[j][g]
		if j == i || tj == nil {
			continue
		}
		if !c.cut[link{i, j, g}] {
			ti.Connect(tj.LocalAddr(), tj)
		}
		if !c.cut[link{j, i, g}] {
			tj.Connect(ti.LocalAddr(), ti)
		}
	}
}

func (c *Cluster) disconnectLocked(i, g int) {
	ti := c.transports[i][g]
	if ti == nil {
		return
	}
	for j := range c.configs {
		if tj := c.transports[j][g]; j != i && tj != nil {
			ti.Disconnect(tj.LocalAddr())
			tj.Disconnect(ti.LocalAddr())
		}
	}
}

// isolated reports whether node i is cut from every peer in group g.
func (c *Cluster) isolated(i, g int) bool {
	for j := range c.configs {
		if j != i && !c.cut[link{i, j, g}] {
			return false
		}
	}
	return len(c.configs) > 1
}

func (c *Cluster) index(id string) int {
	for i, cfg := range c.configs {
		if cfg.ID == id {
			return i
		}
	}
	return -1
}

func (c *Cluster) live() []*legacyraft.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*legacyraft.Node
	for _, n := range c.nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

func (c *Cluster) close() {
	c.mu.Lock()
	nodes, servers := c.nodes, c.servers
	c.nodes, c.servers = make([]*legacyraft.Node, len(nodes)), make([]*http.Server, len(nodes))
	c.mu.Unlock()
	var errs []error
	for i, n := range nodes {
		if n != nil {
			errs = append(errs, servers[i].Close(), n.Close())
		}
	}
	require.NoError(c.t, errors.Join(errs...))
}

// Peer is one node with free raft and HTTP addresses on 127.0.0.1, for a
// single-node cluster run as a process would run it.
func Peer(t testing.TB) legacyraft.Peer {
	peers, err := legacyraft.LocalPeers(1, legacyraft.ModeReplicated)
	require.NoError(t, err)
	return peers[0]
}
