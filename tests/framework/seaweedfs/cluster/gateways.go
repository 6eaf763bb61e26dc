package cluster

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// startGateways starts a filer (its leveldb2 store in its directory) and
// an S3 gateway on it, as the cluster's Config asks.
func (c *Cluster) startGateways(ctx context.Context, filer, s3 bool) error {
	if !filer {
		return nil
	}
	c.progress("starting the filer...")
	addr, err := c.AddFiler(ctx, "filer", "", "")
	if err != nil || !s3 {
		return err
	}
	c.progress("starting the S3 gateway...")
	_, err = c.AddS3(ctx, "s3", addr)
	return err
}

// FilerAddr is the filer's address as weed names servers (ip:port.grpc),
// or "" without a filer.
func (c *Cluster) FilerAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, err := c.service("filer"); err == nil {
		return f.weedAddr()
	}
	return ""
}

// S3Endpoint is the S3 gateway's host:port, or "" without one.
func (c *Cluster) S3Endpoint() string {
	addr, _ := c.ServiceAddr("s3")
	return addr
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
