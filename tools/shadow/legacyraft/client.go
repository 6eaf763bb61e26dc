package legacyraft

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var (
	_ legacy.Allocator     = (*Client)(nil)
	_ legacy.WriteReporter = (*Client)(nil)

	errNoAddrs = fmt.Errorf("%w: client has no node addresses", legacy.ErrRejected)
)

// Client talks to a legacyraft cluster over HTTP, the way an S3 gateway
// talks to SeaweedFS masters: it sticks to a node that answers, moves to the
// next node when one is unreachable, follows a not-leader hint once, and
// moves to the leader a follower forwarded its request to (when that is one
// of its addresses), so that it pays the follower's hop once, not on every
// request. It does not retry a reachable cluster's "unavailable" answers:
// the shadow comparison must see them. It is safe for concurrent use.
type Client struct {
	addrs []string
	hc    *http.Client

	mu        sync.Mutex
	preferred string // guarded by mu; last node that answered
}

// NewClient returns a client for the API addresses of the cluster's nodes;
// timeout bounds each HTTP exchange.
func NewClient(addrs []string, timeout time.Duration) *Client {
	c := &Client{addrs: slices.Clone(addrs), hc: &http.Client{Timeout: timeout}}
	if len(addrs) > 0 {
		c.preferred = addrs[0]
	}
	return c
}

// Allocate implements legacy.Allocator.
func (c *Client) Allocate(ctx context.Context, rangeKey string, count uint64) (legacy.Result, error) {
	var res legacy.Result
	err := c.try(ctx, func(addr string) (string, error) {
		var (
			leader string
			err    error
		)
		res, leader, err = callAllocate(ctx, c.hc, addr, rangeKey, count, false)
		return leader, err
	})
	return res, err
}

// readyPoll is how often WaitReady retries.
const readyPoll = 100 * time.Millisecond

// WaitReady allocates one id of the range "warmup" until the cluster answers
// (a leader exists and has warmed up) or ctx ends; a fresh cluster is usable
// only then.
func (c *Client) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		_, err := c.Allocate(ctx, "warmup", 1)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("legacy cluster not ready: %w (last error: %w)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Status asks the node at addr for its view of the cluster (/status): who
// leads each group in which term. A failover benchmark uses it to find the
// leader it kills.
func (c *Client) Status(ctx context.Context, addr string) (Status, error) {
	var s Status
	_, err := call(ctx, c.hc, addr, pathStatus, nil, false, &s)
	return s, err
}

// ReportWritten implements legacy.WriteReporter.
func (c *Client) ReportWritten(ctx context.Context, rangeKey string, maxWritten uint64) error {
	return c.try(ctx, func(addr string) (string, error) {
		return callWritten(ctx, c.hc, addr, rangeKey, maxWritten, false)
	})
}

// try runs op on the preferred node, then on the hinted leader or the other
// nodes, at most len(addrs)+1 times. op returns the leader a follower
// forwarded it to, which becomes the preferred node if it is one of addrs
// (a node cannot point the client at an address it was not given).
func (c *Client) try(ctx context.Context, op func(addr string) (leader string, err error)) error {
	if len(c.addrs) == 0 {
		return errNoAddrs
	}
	c.mu.Lock()
	addr := c.preferred
	c.mu.Unlock()
	var err error
	for range len(c.addrs) + 1 {
		var leader string
		if leader, err = op(addr); err == nil {
			if slices.Contains(c.addrs, leader) {
				addr = leader
			}
			c.mu.Lock()
			c.preferred = addr
			c.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		switch hint := legacy.LeaderHint(err); {
		case hint != "" && hint != addr:
			addr = hint
		case errors.Is(err, errTransport):
			addr = c.next(addr)
		default:
			return err
		}
	}
	return err
}

func (c *Client) next(addr string) string {
	i := slices.Index(c.addrs, addr)
	return c.addrs[(i+1)%len(c.addrs)]
}
