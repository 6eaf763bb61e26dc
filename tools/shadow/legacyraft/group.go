package legacyraft

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// group is one raft group on this node plus the leadership facts the modes
// need (since when, in which term this node leads).
type group struct {
	id     int
	raft   *raft.Raft
	trans  raft.Transport
	stores Stores
	notify chan bool
	done   chan struct{}
	// batcher proposes allocations in the counter modes; nil in seaweedfs mode.
	batcher *batcher
	wg      sync.WaitGroup

	mu          sync.Mutex
	leaderSince time.Time // guarded by mu; zero when not leader
	leaderTerm  uint64    // guarded by mu
}

func startGroup(cfg Config, id int, fsm raft.FSM, opts Options, onLeader func(*group)) (*group, error) {
	self, _ := cfg.peer(cfg.ID)
	addr, err := groupAddr(self.RaftAddr, id)
	if err != nil {
		return nil, err
	}
	stores, err := openStores(cfg, id, opts)
	if err != nil {
		return nil, err
	}
	trans, err := openTransport(id, raft.ServerAddress(addr), opts)
	if err != nil {
		closeStores(stores)
		return nil, err
	}
	g := &group{id: id, trans: trans, stores: stores, notify: make(chan bool, 1), done: make(chan struct{})}
	rc := raftConfig(cfg, opts, g.notify, id)
	if err := bootstrapIfNew(cfg, id, rc, stores, trans); err != nil {
		g.closeIO()
		return nil, err
	}
	if g.raft, err = raft.NewRaft(rc, fsm, stores.Logs, stores.Stable, stores.Snaps, trans); err != nil {
		g.closeIO()
		return nil, fmt.Errorf("group %d: new raft: %w", id, err)
	}
	g.wg.Add(1)
	go g.watchLeadership(onLeader)
	return g, nil
}

func raftConfig(cfg Config, opts Options, notify chan bool, id int) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = min(rc.CommitTimeout, cfg.LeaderLeaseTimeout/2)
	rc.NotifyCh = notify
	rc.NoLegacyTelemetry = true
	rc.Logger = logger(opts).Named(fmt.Sprintf("raft-g%d", id))
	return rc
}

func bootstrapIfNew(cfg Config, id int, rc *raft.Config, s Stores, trans raft.Transport) error {
	has, err := raft.HasExistingState(s.Logs, s.Stable, s.Snaps)
	if err != nil || has {
		return err
	}
	var servers []raft.Server
	for _, p := range cfg.Peers {
		addr, err := groupAddr(p.RaftAddr, id)
		if err != nil {
			return err
		}
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(addr)})
	}
	return raft.BootstrapCluster(rc, s.Logs, s.Stable, s.Snaps, trans, raft.Configuration{Servers: servers})
}

// watchLeadership records when this node gains leadership, the way the
// SeaweedFS master starts its warm-up on election.
func (g *group) watchLeadership(onLeader func(*group)) {
	defer g.wg.Done()
	for {
		select {
		case <-g.done:
			return
		case isLeader := <-g.notify:
			g.mu.Lock()
			g.leaderSince, g.leaderTerm = time.Time{}, 0
			if isLeader {
				g.leaderSince, g.leaderTerm = time.Now(), g.raft.CurrentTerm()
			}
			g.mu.Unlock()
			if isLeader && onLeader != nil {
				onLeader(g)
			}
		}
	}
}

// leadership returns when this node became leader, or zero if it is not.
func (g *group) leadership() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leaderSince
}

// leader returns the group's leader id as this node observes it.
func (g *group) leader() string {
	_, id := g.raft.LeaderWithID()
	return string(id)
}

func (g *group) shutdown() error {
	close(g.done)
	err := g.raft.Shutdown().Error() // fails in-flight futures fast
	if g.batcher != nil {
		g.batcher.stop()
	}
	g.wg.Wait()
	return errors.Join(err, g.closeIO())
}

func (g *group) closeIO() error {
	var err error
	if c, ok := g.trans.(io.Closer); ok {
		err = c.Close()
	}
	return errors.Join(err, closeStores(g.stores))
}

func closeStores(s Stores) error {
	if s.Closer != nil {
		return s.Closer.Close()
	}
	return nil
}

func openStores(cfg Config, id int, opts Options) (Stores, error) {
	if opts.Stores != nil {
		return opts.Stores(id)
	}
	if cfg.Dir == "" {
		logs := raft.NewInmemStore()
		return Stores{Logs: logs, Stable: logs, Snaps: raft.NewInmemSnapshotStore()}, nil
	}
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("group-%d", id))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Stores{}, err
	}
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return Stores{}, fmt.Errorf("group %d: open boltdb: %w", id, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger(opts))
	if err != nil {
		_ = bolt.Close()
		return Stores{}, fmt.Errorf("group %d: snapshot store: %w", id, err)
	}
	return Stores{Logs: bolt, Stable: bolt, Snaps: snaps, Closer: bolt}, nil
}

func openTransport(id int, addr raft.ServerAddress, opts Options) (raft.Transport, error) {
	if opts.Transport != nil {
		return opts.Transport(id, addr)
	}
	t, err := raft.NewTCPTransportWithLogger(string(addr), nil, 3, 10*time.Second, logger(opts))
	if err != nil {
		return nil, fmt.Errorf("group %d: tcp transport: %w", id, err)
	}
	return t, nil
}
