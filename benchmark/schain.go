package benchmark

import (
	"context"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/localnet"
)

var (
	_ Cluster = (*SChainCluster)(nil)

	errShortReceipt = errors.New("receipt lacks this request's entry")
	errUnknownNode  = errors.New("not a node of this network")
	errNoDirectAPI  = errors.New("no direct API")
)

// SChainCluster is a local S-Chain network the bench started and owns,
// written through the owner-routing client with the network's token.
type SChainCluster struct {
	net    *localnet.Network
	root   string
	router *client.Router
	names  map[ids.NodeID]string
	pooled bool
}

// Pooled is the same network written with pooled allocations (answered by
// each owner from its committed reservation, see writer.Writer.AllocatePooled). It
// shares the network: stopping it stops nothing, and a kill through either
// view kills the same node.
func (c *SChainCluster) Pooled() *SChainCluster {
	p := *c
	p.root, p.pooled = "", true
	return &p
}

// PooledBatchesPerNode is how many allocateBatch exchanges the batched
// view keeps in flight per node: a request waits only while all are busy,
// then rides the next exchange with every request that waited. One: on a
// machine whose cores the nodes, plugins and clients share, an exchange
// costs far more than a request in it, and fewer, larger exchanges serve
// more. Through the direct API, 64 clients on four validators made 28,786
// requests/s with one, 22,542 with two, 16,961 with four and 12,932 with
// eight (docs/performance.md, "Exchanges in flight").
const PooledBatchesPerNode = 1

// PooledBatched is the pooled view through a router that coalesces
// concurrent requests to one owner into allocateBatch exchanges
// (client.RouterConfig.PooledBatches): the same requests and answers, fewer
// exchanges through the node's HTTP server and the plugin hop.
func (c *SChainCluster) PooledBatched() (*SChainCluster, error) {
	p := *c
	p.root, p.pooled = "", true
	var err error
	if p.router, err = client.NewRouter(c.net.ChainURIsBase(), c.net.ChainID.String(), routerConfig(c.net, true)); err != nil {
		return nil, err
	}
	return &p, nil
}

// Direct is a view through each plugin's direct API (getNode's directURI)
// instead of the node's: the same requests, pooled or not, without the
// node's HTTP server and the HTTP-over-gRPC hop; batched coalesces pooled
// requests as PooledBatched does.
func (c *SChainCluster) Direct(ctx context.Context, pooled, batched bool) (*SChainCluster, error) {
	p := *c
	p.root, p.pooled = "", pooled
	rc := routerConfig(c.net, batched)
	uris, err := client.DirectURIs(ctx, c.net.ChainURIsBase(), c.net.ChainID.String(), rc.Client)
	if err != nil {
		return nil, err
	}
	for i, u := range uris {
		if u == c.net.ChainURIsBase()[i] {
			return nil, fmt.Errorf("%w: node %d announces no direct API (chain config directAPI)", errNoDirectAPI, i+1)
		}
	}
	if p.router, err = client.NewRouter(uris, c.net.ChainID.String(), rc); err != nil {
		return nil, err
	}
	return &p, nil
}

// StartSChain starts a network (cfg.RootDir should be the bench's own, not
// the one `make run` uses) and returns it; on failure it stops what it
// started. The chain opens its first membership on the first requests (the
// runner's warm-up retries until every range allocated once).
func StartSChain(ctx context.Context, cfg localnet.Config) (*SChainCluster, error) {
	// A network a killed bench left behind holds ports and processes.
	_ = localnet.StopAll(ctx, cfg.RootDir, nil)
	n, err := localnet.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := attach(n, cfg.RootDir)
	if err != nil {
		_ = localnet.StopAll(context.Background(), cfg.RootDir, nil)
		return nil, err
	}
	return c, nil
}

// AttachSChain drives a running network that someone else started and
// stops (the e2e suite's): Stop leaves it running.
func AttachSChain(n *localnet.Network) (*SChainCluster, error) {
	return attach(n, "")
}

// attach builds the cluster over n; root is the directory Stop stops (""
// for none).
func attach(n *localnet.Network, root string) (*SChainCluster, error) {
	c := &SChainCluster{net: n, root: root, names: map[ids.NodeID]string{}}
	for i, nd := range n.Nodes {
		c.names[nd.NodeID] = fmt.Sprintf("node%d", i+1)
	}
	var err error
	if c.router, err = client.NewRouter(n.ChainURIsBase(), n.ChainID.String(), routerConfig(n, false)); err != nil {
		return nil, err
	}
	return c, nil
}

// Network is the running network (for its directory and node IDs).
func (c *SChainCluster) Network() *localnet.Network { return c.net }

// NodeName is the short name (node1, node2, ...) of a node, in NodeID order.
func (c *SChainCluster) NodeName(id ids.NodeID) string {
	if s, ok := c.names[id]; ok {
		return s
	}
	return id.String()
}

// GetMembership is the membership the next block will have, from any
// node that answers (what a Target's membership watcher polls).
func (c *SChainCluster) GetMembership(ctx context.Context) (*api.MembershipReply, error) {
	return c.router.GetMembership(ctx)
}

// NameOf is NodeName for a NodeID in its string form.
func (c *SChainCluster) NameOf(nodeID string) string {
	id, err := ids.NodeIDFromString(nodeID)
	if err != nil {
		return nodeID
	}
	return c.NodeName(id)
}

// Allocate implements System: the request goes to the range's owner and
// waits there until its block is accepted (following a re-pin to the
// replacing transaction), so the ids returned are committed. A pooled view
// gets ids the owner had already committed, at once.
func (c *SChainCluster) Allocate(ctx context.Context, rangeKey string, count uint64) (uint64, uint64, error) {
	if c.pooled {
		rep, err := c.router.Allocate(ctx, api.AllocateArgs{Range: rangeKey, Count: count, Pooled: true})
		switch {
		case err != nil:
			return 0, 0, err
		case !rep.Pooled || rep.Count != count:
			return 0, 0, fmt.Errorf("%w: range %s: a pooled request was answered without pooled ids", errShortReceipt, rangeKey)
		}
		return rep.Base, rep.Count, nil
	}
	committed, err := c.router.AllocateCommitted(ctx, api.AllocateArgs{Range: rangeKey, Count: count})
	if err != nil {
		return 0, 0, err
	}
	return committed.Entry.Base, committed.Entry.Count, nil
}

// Owners implements Cluster: each range's owner in the membership the next block will have.
func (c *SChainCluster) Owners(ctx context.Context, ranges []string) ([]string, error) {
	out := make([]string, len(ranges))
	for i, rk := range ranges {
		o, err := c.router.GetOwner(ctx, rk)
		if err != nil {
			return nil, fmt.Errorf("owner of %s: %w", rk, err)
		}
		out[i] = c.NodeName(ids.NodeID(o.Owner))
	}
	return out, nil
}

// Kill implements Cluster: SIGKILL to a validator by short name (node1..),
// reaped before it returns.
func (c *SChainCluster) Kill(ctx context.Context, node string) error {
	for id, name := range c.names {
		if name == node {
			return c.net.KillNode(ctx, id)
		}
	}
	return fmt.Errorf("%w: %q", errUnknownNode, node)
}

// Stop implements Cluster: every node of a network StartSChain started
// stops and the network is forgotten (its data stays under the root
// directory for inspection); an attached network keeps running.
func (c *SChainCluster) Stop(ctx context.Context) error {
	if c.root == "" {
		return nil
	}
	return localnet.StopAll(ctx, c.root, nil)
}

// routerConfig is the bench's router over n: the network's token, and
// allocateBatch coalescing when batched.
func routerConfig(n *localnet.Network, batched bool) client.RouterConfig {
	rc := client.DefaultRouterConfig()
	rc.Client.Token = n.Token
	if batched {
		rc.PooledBatches = PooledBatchesPerNode
	}
	return rc
}
