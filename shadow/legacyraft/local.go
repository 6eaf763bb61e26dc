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
)

// LocalCluster is an n-node legacy allocator running in this process over
// real TCP raft and HTTP on 127.0.0.1: the "embedded legacy" of
// `schain shadow run` and `make run`.
type LocalCluster struct {
	addrs  []string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// StartLocalCluster starts n nodes in mode under dir and waits until the
// cluster answers an allocation (a leader exists and warmed up) or ctx ends.
func StartLocalCluster(ctx context.Context, n int, mode Mode, dir string) (*LocalCluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("legacyraft: a cluster needs at least one node, got %d", n)
	}
	base := DefaultConfig()
	peers, err := LocalPeers(n, mode)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c := &LocalCluster{cancel: cancel}
	for i, p := range peers {
		cfg := base
		cfg.ID, cfg.Dir, cfg.Mode = p.ID, filepath.Join(dir, p.ID), mode
		cfg.Bind, cfg.HTTPBind, cfg.Peers = p.RaftAddr, p.HTTPAddr, peers
		cfg.WarmUp = 0
		c.addrs = append(c.addrs, p.HTTPAddr)
		c.wg.Add(1)
		go func(i int, cfg Config) {
			defer c.wg.Done()
			if err := Serve(runCtx, cfg, Options{}); err != nil {
				c.mu.Lock()
				c.errs = append(c.errs, fmt.Errorf("%s: %w", cfg.ID, err))
				c.mu.Unlock()
			}
		}(i, cfg)
	}
	if err := NewClient(c.addrs, 2*time.Second).WaitReady(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// LocalPeers assigns n voters named legacy1..legacyN free raft and HTTP
// ports on 127.0.0.1 (in ModeSlots, DefaultConfig().Groups consecutive raft
// ports each), for a cluster in this process or in separate processes.
// The ports are free when chosen, not reserved: start the nodes promptly.
func LocalPeers(n int, mode Mode) ([]Peer, error) {
	groups := 1
	if mode == ModeSlots {
		groups = DefaultConfig().Groups
	}
	peers := make([]Peer, n)
	for i := range peers {
		raftPort, err := freePorts(groups)
		if err != nil {
			return nil, err
		}
		httpPort, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		peers[i] = Peer{
			ID:       "legacy" + strconv.Itoa(i+1),
			RaftAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(raftPort)),
			HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort)),
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
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

// freePorts finds k consecutive free ports on 127.0.0.1 (slots mode puts
// group g on port+g) and returns the first.
func freePorts(k int) (int, error) {
	for attempt := 0; attempt < 50; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		first := ln.Addr().(*net.TCPAddr).Port
		held := []net.Listener{ln}
		ok := true
		for g := 1; g < k; g++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(first+g)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			_ = l.Close()
		}
		if ok {
			return first, nil
		}
	}
	return 0, errors.New("legacyraft: no free consecutive ports on 127.0.0.1")
}
