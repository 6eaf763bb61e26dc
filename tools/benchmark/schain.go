package benchmark

import (
	"context"
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/tests/framework/localnet"
)

var (
	_ Cluster = (*SChainCluster)(nil)

	errShortReceipt = errors.New("receipt lacks this request's entry")
	errUnknownNode  = errors.New("not a node of this network")
	errNoDirectAPI  = errors.New("no direct API")
)

// SChainNetwork is an S-Chain network the bench drives: the local network
// (localnet), or one deployed on hosts.
type SChainNetwork interface {
	ChainID() ids.ID
	// Token is a write token of the chain's nodes.
	Token() string
	// Nodes are the validators, in a stable order (node1, node2, ...).
	Nodes() []SChainNode
	// KillNode sends SIGKILL to a validator and waits until it is gone.
	KillNode(ctx context.Context, id ids.NodeID) error
}

// SChainNode is one validator of an SChainNetwork.
type SChainNode struct {
	NodeID ids.NodeID
	// URI is its HTTP API (http://host:port).
	URI string
	// PID is its avalanchego process (its plugin is a child of it).
	PID int
}

// uris are the nodes' base URIs.
func uris(n SChainNetwork) []string {
	var out []string
	for _, nd := range n.Nodes() {
		out = append(out, nd.URI)
	}
	return out
}

// localNetwork is a local network as an SChainNetwork.
type localNetwork struct{ n *localnet.Network }

func (l localNetwork) ChainID() ids.ID { return l.n.ChainID }
func (l localNetwork) Token() string   { return l.n.Token }
func (l localNetwork) KillNode(ctx context.Context, id ids.NodeID) error {
	return l.n.KillNode(ctx, id)
}

func (l localNetwork) Nodes() []SChainNode {
	out := make([]SChainNode, len(l.n.Nodes))
	for i, nd := range l.n.Nodes {
		out[i] = SChainNode{NodeID: nd.NodeID, URI: nd.URI, PID: nd.PID}
	}
	return out
}

// SChainCluster is an S-Chain network the bench started and owns, or
// attached to, written through the owner-routing client with the
// network's token.
type SChainCluster struct {
	net    SChainNetwork
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
// eight (docs/internals/performance-log.md, "Exchanges in flight").
const PooledBatchesPerNode = 1

// PooledBatched is the pooled view through a router that coalesces
// concurrent requests to one owner into allocateBatch exchanges
// (client.RouterConfig.PooledBatches): the same requests and answers, fewer
// exchanges through the node's HTTP server and the plugin hop.
func (c *SChainCluster) PooledBatched() (*SChainCluster, error) {
	p := *c
	p.root, p.pooled = "", true
	var err error
	if p.router, err = client.NewRouter(uris(c.net), c.net.ChainID().String(), routerConfig(c.net, true)); err != nil {
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
	base := uris(c.net)
	direct, err := client.DirectURIs(ctx, base, c.net.ChainID().String(), rc.Client)
	if err != nil {
		return nil, err
	}
	for i, u := range direct {
		if u == base[i] {
			return nil, fmt.Errorf("%w: node %d announces no direct API (chain config directAPI)", errNoDirectAPI, i+1)
		}
	}
	if p.router, err = client.NewRouter(direct, c.net.ChainID().String(), rc); err != nil {
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
	c, err := attach(localNetwork{n}, cfg.RootDir)
	if err != nil {
		_ = localnet.StopAll(context.Background(), cfg.RootDir, nil)
		return nil, err
	}
	return c, nil
}

// AttachSChain drives a running network that someone else started and
// stops (the e2e suite's): Stop leaves it running.
func AttachSChain(n *localnet.Network) (*SChainCluster, error) {
	return attach(localNetwork{n}, "")
}

// AttachNetwork drives an S-Chain network that someone else started and
// stops (one deployed on hosts): Stop leaves it running.
func AttachNetwork(n SChainNetwork) (*SChainCluster, error) {
	return attach(n, "")
}

// attach builds the cluster over n; root is the directory Stop stops (""
// for none).
func attach(n SChainNetwork, root string) (*SChainCluster, error) {
	c := &SChainCluster{net: n, root: root, names: map[ids.NodeID]string{}}
	for i, nd := range n.Nodes() {
		c.names[nd.NodeID] = fmt.Sprintf("node%d", i+1)
	}
	var err error
	if c.router, err = client.NewRouter(uris(n), n.ChainID().String(), routerConfig(n, false)); err != nil {
		return nil, err
	}
	return c, nil
}

// Nodes are the network's validators, in node order.
func (c *SChainCluster) Nodes() []SChainNode { return c.net.Nodes() }

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
func routerConfig(n SChainNetwork, batched bool) client.RouterConfig {
	rc := client.DefaultRouterConfig()
	rc.Client.Token = n.Token()
	if batched {
		rc.PooledBatches = PooledBatchesPerNode
	}
	return rc
}
