package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/s-chain/schain/seaweedfs/schainseq"
)

// layoutGateways sets up the filer and the S3 gateway, if any: the filer
// keeps its store (leveldb) in its directory and follows the masters of
// peers; the S3 gateway serves on the filer.
func (c *Cluster) layoutGateways(peers string) error {
	st := &c.state
	var env []string
	if st.Mode.Leaderless() {
		env = []string{schainseq.LeaderlessEnv + "=1"}
	}
	if f := st.Filer; f != nil {
		dir := filepath.Join(st.Dir, "filer")
		if err := os.MkdirAll(filepath.Join(dir, "store"), 0o755); err != nil {
			return err
		}
		f.Name, f.Dir, f.Log, f.Env = "filer", dir, filepath.Join(dir, "filer.log"), env
		f.Args = []string{
			"filer", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-port=" + strconv.Itoa(f.HTTP), "-port.grpc=" + strconv.Itoa(f.GRPC),
			"-master=" + peers, "-defaultStoreDir=" + filepath.Join(dir, "store"),
		}
	}
	if g := st.S3; g != nil {
		dir := filepath.Join(st.Dir, "s3")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		g.Name, g.Dir, g.Log, g.Env = "s3", dir, filepath.Join(dir, "s3.log"), env
		g.Args = []string{
			"s3", "-ip.bind=127.0.0.1", "-port=" + strconv.Itoa(g.HTTP), "-port.grpc=" + strconv.Itoa(g.GRPC),
			"-port.iceberg=0", "-port.lance=0", "-filer=" + c.FilerAddr(),
		}
	}
	return nil
}

// startGateways starts the filer and the S3 gateway, if any, and waits
// until each accepts connections.
func (c *Cluster) startGateways(ctx context.Context) error {
	for _, g := range []*gateway{c.state.Filer, c.state.S3} {
		if g == nil {
			continue
		}
		c.progress("starting the %s on 127.0.0.1:%d...", g.Name, g.HTTP)
		if err := g.start(c.state.Weed, c.state.Detach); err != nil {
			return err
		}
		if err := c.save(); err != nil {
			return err
		}
		if err := waitListening(ctx, fmt.Sprintf("127.0.0.1:%d", g.HTTP)); err != nil {
			return fmt.Errorf("%s: %w", g.Name, err)
		}
	}
	return nil
}

// waitListening waits until addr accepts a TCP connection.
func waitListening(ctx context.Context, addr string) error {
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		if serr := sleepCtx(ctx, 100*time.Millisecond); serr != nil {
			return fmt.Errorf("waiting for %s to listen: %w (last: %w)", addr, serr, err)
		}
	}
}

// FilerAddr is the filer's address as weed names servers (ip:port.grpc),
// or "" without a filer.
func (c *Cluster) FilerAddr() string {
	if c.state.Filer == nil {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d.%d", c.state.Filer.HTTP, c.state.Filer.GRPC)
}

// S3Endpoint is the S3 gateway's host:port, or "" without one.
func (c *Cluster) S3Endpoint() string {
	if c.state.S3 == nil {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", c.state.S3.HTTP)
}

// Peers is the masters' list as volume servers, filers and shells take it
// (-master): ip:http.grpc of every master, comma-separated.
func (c *Cluster) Peers() string { return c.peers() }

// WaitMasters waits until every live master answers /cluster/status naming
// itself as the leader: how masters without raft are ready.
func (c *Cluster) WaitMasters(ctx context.Context) error {
	var last error
	for {
		last = nil
		for i, addr := range c.MasterAddrs() {
			if !c.state.Masters[i].alive() {
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := c.client.Status(sctx, addr)
			cancel()
			if err == nil && st.Leader != addr {
				err = fmt.Errorf("%s names %q as its leader, not itself", addr, st.Leader)
			}
			if err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return nil
		}
		if serr := sleepCtx(ctx, 100*time.Millisecond); serr != nil {
			return fmt.Errorf("waiting for the masters: %w (last: %w)", serr, last)
		}
	}
}

// PauseMaster stops master i with SIGSTOP (it holds its sockets and
// answers nothing), ResumeMaster continues it with SIGCONT.
func (c *Cluster) PauseMaster(i int) error { return c.signalMaster(i, syscall.SIGSTOP) }

// ResumeMaster continues master i after PauseMaster.
func (c *Cluster) ResumeMaster(i int) error { return c.signalMaster(i, syscall.SIGCONT) }

func (c *Cluster) signalMaster(i int, sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.state.Masters[i]
	if !m.alive() {
		return fmt.Errorf("%s is not running", m.Name)
	}
	if err := syscall.Kill(m.PID, sig); err != nil {
		return fmt.Errorf("signalling %s (pid %d): %w", m.Name, m.PID, err)
	}
	return nil
}
