package legacyraft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/s-chain/schain/tests/framework/ports"
)

// LocalCluster is an n-node legacy allocator running in this process over
// real TCP raft and HTTP on 127.0.0.1: the "embedded legacy" of
// `schain shadow run` and `make run`.
type LocalCluster struct {
	addrs  []string
	bound  []boundPeer
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// StartLocalCluster starts n nodes in mode under dir and waits until the
// cluster answers an allocation (a leader exists and warmed up) or ctx ends.
// Every port is bound before the nodes start and handed to them, so no
// other listener or outgoing connection can take it in between.
func StartLocalCluster(ctx context.Context, n int, mode Mode, dir string) (*LocalCluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("legacyraft: a cluster needs at least one node, got %d", n)
	}
	bound, err := bindLocalPeers(n, mode)
	if err != nil {
		return nil, err
	}
	peers := make([]Peer, n)
	for i, b := range bound {
		peers[i] = b.peer
	}
	base := DefaultConfig()
	runCtx, cancel := context.WithCancel(context.Background())
	c := &LocalCluster{cancel: cancel, bound: bound}
	for _, b := range bound {
		cfg := base
		cfg.ID, cfg.Dir, cfg.Mode = b.peer.ID, filepath.Join(dir, b.peer.ID), mode
		cfg.Bind, cfg.HTTPBind, cfg.Peers = b.peer.RaftAddr, b.peer.HTTPAddr, peers
		cfg.WarmUp = 0
		c.addrs = append(c.addrs, b.peer.HTTPAddr)
		c.wg.Add(1)
		go func(cfg Config, opts Options) {
			defer c.wg.Done()
			if err := Serve(runCtx, cfg, opts); err != nil {
				c.mu.Lock()
				c.errs = append(c.errs, fmt.Errorf("%s: %w", cfg.ID, err))
				c.mu.Unlock()
			}
		}(cfg, Options{Listener: b.http, Transport: b.transport})
	}
	if err := NewClient(c.addrs, 2*time.Second).WaitReady(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// LocalPeers assigns n voters named legacy1..legacyN free raft and HTTP
// ports on 127.0.0.1 (in ModeSlots, DefaultConfig().Groups consecutive raft
// ports each), for nodes in separate processes. The ports are free when
// chosen, not reserved (see package ports): start the nodes promptly.
// StartLocalCluster binds its ports instead.
func LocalPeers(n int, mode Mode) ([]Peer, error) {
	firsts, err := ports.Runs(localRuns(n, mode)...)
	if err != nil {
		return nil, fmt.Errorf("legacyraft: %w", err)
	}
	peers := make([]Peer, n)
	for i := range peers {
		peers[i] = localPeer(i, firsts[2*i], firsts[2*i+1])
	}
	return peers, nil
}

// localRuns are the port runs of n local voters: each its raft ports (one
// per group, group g on port+g), then its HTTP port.
func localRuns(n int, mode Mode) []int {
	cfg := DefaultConfig()
	cfg.Mode = mode
	runs := make([]int, 0, 2*n)
	for range n {
		runs = append(runs, cfg.GroupCount(), 1)
	}
	return runs
}

// localPeer is voter i (legacy1..) with its first raft port and HTTP port.
func localPeer(i, raftPort, httpPort int) Peer {
	return Peer{
		ID:       "legacy" + strconv.Itoa(i+1),
		RaftAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(raftPort)),
		HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
	}
}

// boundPeer is a peer whose HTTP port and raft ports (one per group) are
// already listening.
type boundPeer struct {
	peer Peer
	http net.Listener
	raft []net.Listener
}

func (b boundPeer) close() {
	_ = b.http.Close()
	ports.Close(b.raft)
}

// transport is Options.Transport over the group's bound raft listener.
func (b boundPeer) transport(group int, addr raft.ServerAddress) (raft.Transport, error) {
	if group < 0 || group >= len(b.raft) {
		return nil, fmt.Errorf("legacyraft: %s has %d bound raft ports, group %d asked for one", b.peer.ID, len(b.raft), group)
	}
	ln := b.raft[group]
	if got := ln.Addr().String(); got != string(addr) {
		return nil, fmt.Errorf("legacyraft: %s group %d: bound %s, config says %s", b.peer.ID, group, got, addr)
	}
	return raft.NewNetworkTransportWithLogger(boundStream{ln}, 3, 10*time.Second, logger(Options{})), nil
}

// boundStream is raft's stream layer over a listener bound beforehand.
type boundStream struct{ net.Listener }

func (s boundStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

// bindLocalPeers binds n voters' ports on 127.0.0.1 (localRuns) and keeps
// them bound.
func bindLocalPeers(n int, mode Mode) ([]boundPeer, error) {
	runs, err := ports.Listen(localRuns(n, mode)...)
	if err != nil {
		return nil, fmt.Errorf("legacyraft: %w", err)
	}
	peers := make([]boundPeer, n)
	for i := range peers {
		raft, http := runs[2*i], runs[2*i+1][0]
		peers[i] = boundPeer{
			peer: localPeer(i, raft[0].Addr().(*net.TCPAddr).Port, http.Addr().(*net.TCPAddr).Port),
			http: http,
			raft: raft,
		}
	}
	return peers, nil
}

// Addrs are the nodes' HTTP addresses (for NewClient).
func (c *LocalCluster) Addrs() []string { return c.addrs }

// Close stops every node and returns what they reported.
func (c *LocalCluster) Close() error {
	c.cancel()
	c.wg.Wait()
	// A node that failed before taking its listeners leaves them open.
	for _, b := range c.bound {
		b.close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}
