package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/s-chain/schain/api"
)

// DirectURIs returns, for each node URI in order, the base URI at which the
// node's plugin serves the API itself (getNode's directURI, chain config
// directAPI), or the node URI when it serves none. A Router over the
// result reaches the same API without the node's HTTP server and
// rpcchainvm's hop into the plugin, which is most of what a pooled
// allocation costs. A node restarted with directAPI port 0 listens on a new
// port: ask again after a restart (or give the node a fixed port).
func DirectURIs(ctx context.Context, nodeURIs []string, chainID string, cfg Config) ([]string, error) {
	out := make([]string, len(nodeURIs))
	for i, uri := range nodeURIs {
		c, err := New(uri, chainID, cfg)
		if err != nil {
			return nil, err
		}
		n, err := c.GetNode(ctx)
		if err != nil {
			return nil, fmt.Errorf("asking %s for its direct API: %w", uri, err)
		}
		out[i] = uri
		if n.DirectURI != "" {
			at, err := c.directAt(n.DirectURI)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", uri, err)
			}
			out[i] = at.uri
		}
	}
	return out, nil
}

// ErrForeignDirect: a node announced a direct API this client will not
// use. The client sends its write token with every call, so it follows an
// announcement only to the host it was given for the node, and never from
// https down to http: a node (or whoever answers in its name) cannot send
// the token elsewhere.
var ErrForeignDirect = errors.New("announced direct API is not on the node's host")

// directAt checks an announced direct API against the node's URI and
// returns where to call it.
func (c *Client) directAt(announced string) (directAt, error) {
	u, err := url.Parse(strings.TrimRight(announced, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return directAt{}, fmt.Errorf("%w: %q is not a base URI (scheme://host:port)", ErrForeignDirect, announced)
	}
	node, err := url.Parse(c.uri)
	if err != nil {
		return directAt{}, fmt.Errorf("%w: %w", ErrForeignDirect, err)
	}
	switch {
	case !strings.EqualFold(u.Hostname(), node.Hostname()):
		return directAt{}, fmt.Errorf("%w: %s announced for the node at %s (hint: the node's directAPI host must be the one clients reach it at)", ErrForeignDirect, u, c.uri)
	case node.Scheme == "https" && u.Scheme != "https":
		return directAt{}, fmt.Errorf("%w: %s would downgrade the node's https", ErrForeignDirect, u)
	}
	return directAt{uri: u.String(), endpoint: u.String() + strings.TrimPrefix(c.endpoint, c.uri)}, nil
}

// directRetry is how long a client with Config.Direct waits before asking
// getNode again, after its node announced no direct API or the announced
// one refused a connection.
var directRetry = 5 * time.Second // a variable for tests

// directRoute is what a Client with Config.Direct knows of its node's
// direct API.
type directRoute struct {
	mu      sync.Mutex
	at      directAt  // guarded by mu; zero when none is known
	askedAt time.Time // guarded by mu; when getNode was last asked
}

// directAt is one announced direct API: its base URI and JSON-RPC URL.
type directAt struct{ uri, endpoint string }

// endpoint returns the direct API to call, asking the node (through its own
// API) when none is known and the last answer is old enough.
func (d *directRoute) endpoint(ctx context.Context, c *Client) (directAt, bool) {
	d.mu.Lock()
	if d.at.endpoint != "" {
		defer d.mu.Unlock()
		return d.at, true
	}
	if !d.askedAt.IsZero() && time.Since(d.askedAt) < directRetry {
		d.mu.Unlock()
		return directAt{}, false
	}
	d.askedAt = time.Now()
	d.mu.Unlock()

	full, id, body, err := c.encode("getNode", api.Empty{})
	if err != nil {
		return directAt{}, false
	}
	var n api.NodeReply
	if err := c.exchange(ctx, ctx, c.endpoint, c.uri, full, body, id, &n); err != nil || n.DirectURI == "" {
		return directAt{}, false
	}
	at, err := c.directAt(n.DirectURI)
	if err != nil {
		return directAt{}, false // not one to follow: stay on the node's API
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.at = at
	return at, true
}

// forget drops at after a transport failure there.
func (d *directRoute) forget(at directAt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == at {
		d.at, d.askedAt = directAt{}, time.Now()
	}
}

// refused: err is a transport failure before anything was sent (the
// connection could not be made), so the call may go elsewhere without
// having been made twice.
func refused(err error) bool {
	var op *net.OpError
	return errors.Is(err, ErrTransport) && errors.As(err, &op) && op.Op == "dial"
}
