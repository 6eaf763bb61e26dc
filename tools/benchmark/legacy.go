package benchmark

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

// stopGrace bounds how long a node gets to exit after SIGINT before SIGKILL.
const stopGrace = 5 * time.Second

var (
	_ Cluster = (*LegacyCluster)(nil)

	errNoLeader = errors.New("no live legacy node knows a leader")
	errNotLive  = errors.New("not a live node of this cluster")
)

// LegacyConfig says how to start a legacy cluster of processes.
type LegacyConfig struct {
	// Binary is the schain CLI that serves a node (`schain legacy serve`).
	Binary string
	// Dir holds each node's raft data and log (<Dir>/<id>/).
	Dir string
	// Mode is the legacy counter placement (seaweedfs, replicated, slots).
	Mode legacyraft.Mode
	// Nodes is the number of voters (3 for the bench).
	Nodes int
	// WarmUp is how long a new seaweedfs-mode leader refuses to allocate
	// (the real master waits about 15 s for volume servers).
	WarmUp time.Duration
	// Timeout bounds each HTTP exchange of the client.
	Timeout time.Duration
	// Hosts places the nodes, one each (nil: all on 127.0.0.1 with ports
	// from tests/framework/ports): node i listens on Hosts[i]'s address, raft from
	// LegacyRaftPort, its API on LegacyHTTPPort.
	Hosts []LegacyHost
}

// LegacyHost is where a legacy node runs: an address, and the prefix that
// runs a program there (ip netns exec <host>).
type LegacyHost struct {
	Addr string
	Wrap []string
}

// The ports of a legacy node placed on a host of its own.
const (
	LegacyRaftPort = 7000
	LegacyHTTPPort = 7100
)

// LegacyCluster is the legacy raft allocator as separate `schain legacy
// serve` processes on 127.0.0.1 or on hosts, driven through legacyraft.Client the way an
// S3 gateway drives SeaweedFS masters.
type LegacyCluster struct {
	cfg    LegacyConfig
	peers  []legacyraft.Peer
	client *legacyraft.Client

	mu    sync.Mutex
	procs map[string]*process // guarded by mu; live nodes by id
}

// process is one started node; done closes once it was reaped.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// StartLegacy starts cfg.Nodes processes and waits until the cluster
// allocates. On failure it stops what it started.
func StartLegacy(ctx context.Context, cfg LegacyConfig) (*LegacyCluster, error) {
	if _, err := os.Stat(cfg.Binary); err != nil {
		return nil, fmt.Errorf("legacy node binary %s: %w (run `make build`)", cfg.Binary, err)
	}
	peers, err := legacyPeers(cfg)
	if err != nil {
		return nil, err
	}
	c := &LegacyCluster{cfg: cfg, peers: peers, procs: map[string]*process{}}
	addrs := make([]string, len(peers))
	specs := make([]string, len(peers))
	for i, p := range peers {
		addrs[i] = p.HTTPAddr
		specs[i] = p.ID + "=" + p.RaftAddr + "=" + p.HTTPAddr
	}
	c.client = legacyraft.NewClient(addrs, cfg.Timeout)
	for _, p := range peers {
		if err := c.spawn(p, strings.Join(specs, ",")); err != nil {
			_ = c.Stop(context.Background())
			return nil, err
		}
	}
	if err := c.client.WaitReady(ctx); err != nil {
		_ = c.Stop(context.Background())
		return nil, fmt.Errorf("legacy %s cluster (logs under %s): %w", cfg.Mode, cfg.Dir, err)
	}
	return c, nil
}

// legacyPeers are the nodes' addresses: on loopback, or on their hosts.
func legacyPeers(cfg LegacyConfig) ([]legacyraft.Peer, error) {
	if cfg.Hosts == nil {
		return legacyraft.LocalPeers(cfg.Nodes, cfg.Mode)
	}
	if len(cfg.Hosts) != cfg.Nodes {
		return nil, fmt.Errorf("legacy: %d hosts for %d nodes", len(cfg.Hosts), cfg.Nodes)
	}
	peers := make([]legacyraft.Peer, cfg.Nodes)
	for i, h := range cfg.Hosts {
		peers[i] = legacyraft.Peer{
			ID:       fmt.Sprintf("legacy%d", i+1),
			RaftAddr: net.JoinHostPort(h.Addr, strconv.Itoa(LegacyRaftPort)),
			HTTPAddr: net.JoinHostPort(h.Addr, strconv.Itoa(LegacyHTTPPort)),
		}
	}
	return peers, nil
}

func (c *LegacyCluster) spawn(p legacyraft.Peer, peers string) error {
	dir := filepath.Join(c.cfg.Dir, p.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "node.log"))
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	argv := []string{c.cfg.Binary, "legacy", "serve", "--id", p.ID, "--dir", filepath.Join(dir, "raft"),
		"--bind", p.RaftAddr, "--http", p.HTTPAddr, "--peers", peers, "--mode", string(c.cfg.Mode), "--warmup", c.cfg.WarmUp.String()}
	for i, q := range c.peers {
		if q.ID == p.ID && c.cfg.Hosts != nil {
			argv = append(append([]string{}, c.cfg.Hosts[i].Wrap...), argv...)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting legacy node %s: %w", p.ID, err)
	}
	pr := &process{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(pr.done) }()
	c.mu.Lock()
	c.procs[p.ID] = pr
	c.mu.Unlock()
	return nil
}

// Allocate implements System.
func (c *LegacyCluster) Allocate(ctx context.Context, rangeKey string, count uint64) (uint64, uint64, error) {
	res, err := c.client.Allocate(ctx, rangeKey, count)
	return res.First, res.Count, err
}

// Owners implements Cluster: the leader of each range's raft group, as the
// live nodes report it.
func (c *LegacyCluster) Owners(ctx context.Context, ranges []string) ([]string, error) {
	st, err := c.status(ctx)
	if err != nil {
		return nil, err
	}
	table := legacyraft.NewRouteTable(0, max(len(st.Groups), 1))
	out := make([]string, len(ranges))
	for i, rk := range ranges {
		g, _ := table.Group(legacyraft.Slot(rk))
		if g < len(st.Groups) {
			out[i] = st.Groups[g].Leader
		}
	}
	return out, nil
}

// status returns the view of a live node that knows a leader of group 0.
func (c *LegacyCluster) status(ctx context.Context) (legacyraft.Status, error) {
	var last error = errNoLeader
	for _, p := range c.peers {
		if !c.alive(p.ID) {
			continue
		}
		st, err := c.client.Status(ctx, p.HTTPAddr)
		if err != nil {
			last = err
			continue
		}
		if st.Leader != "" {
			return st, nil
		}
	}
	return legacyraft.Status{}, last
}

func (c *LegacyCluster) alive(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.procs[id]
	return ok
}

// Kill implements Cluster: SIGKILL to a node by id (legacy1..), reaped
// before it returns.
func (c *LegacyCluster) Kill(ctx context.Context, node string) error {
	c.mu.Lock()
	pr, ok := c.procs[node]
	delete(c.procs, node)
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", errNotLive, node)
	}
	if err := pr.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("killing legacy node %s: %w", node, err)
	}
	select {
	case <-pr.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop implements Cluster: SIGINT to every live node, SIGKILL to those
// still running after stopGrace (a leader whose followers stopped first
// can take longer to shut raft down; its data is disposable), each reaped.
func (c *LegacyCluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	procs := c.procs
	c.procs = map[string]*process{}
	c.mu.Unlock()
	for _, pr := range procs {
		_ = pr.cmd.Process.Signal(os.Interrupt)
	}
	gctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	for _, pr := range procs {
		select {
		case <-pr.done:
			continue
		case <-gctx.Done():
		}
		_ = pr.cmd.Process.Signal(syscall.SIGKILL)
		<-pr.done
	}
	return nil
}
