package deploy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ava-labs/avalanchego/api/info"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/rpc"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/avalanchego/wallet/subnet/primary"

	pbuilder "github.com/ava-labs/avalanchego/wallet/chain/p/builder"
	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"

	"github.com/s-chain/schain/operator/subnet"
)

// Info is the part of a node's info API a deployment reads.
type Info interface {
	GetNodeID(ctx context.Context, options ...rpc.Option) (ids.NodeID, *signer.ProofOfPossession, error)
	IsBootstrapped(ctx context.Context, chainID string, options ...rpc.Option) (bool, error)
	GetVMs(ctx context.Context, options ...rpc.Option) (map[ids.ID][]string, error)
	Peers(ctx context.Context, nodeIDs []ids.NodeID, options ...rpc.Option) ([]info.Peer, error)
}

// Endpoint is one avalanchego node as a deployment uses it: its info API,
// its P-chain API (facts and issuing), and the key's P-chain wallet state.
type Endpoint interface {
	Info
	subnet.Node
	subnet.Issuer
	// WalletState fetches the P-chain transaction builder's context (fee
	// weights and gas price) and the UTXOs of addrs.
	WalletState(ctx context.Context, addrs set.Set[ids.ShortID]) (*pbuilder.Context, walletcommon.UTXOs, error)
}

// Dial returns the Endpoint of the node at uri (http://host:port, no path).
func Dial(uri string) Endpoint {
	return endpoint{uri: uri, Client: platformvm.NewClient(uri), info: info.NewClient(uri)}
}

// endpoint is a node's P-chain client (facts, issuing) and its info client.
type endpoint struct {
	uri string
	*platformvm.Client
	info *info.Client
}

func (e endpoint) GetNetworkID(ctx context.Context, options ...rpc.Option) (uint32, error) {
	return e.info.GetNetworkID(ctx, options...)
}

func (e endpoint) GetNodeID(ctx context.Context, options ...rpc.Option) (ids.NodeID, *signer.ProofOfPossession, error) {
	return e.info.GetNodeID(ctx, options...)
}

func (e endpoint) IsBootstrapped(ctx context.Context, chainID string, options ...rpc.Option) (bool, error) {
	return e.info.IsBootstrapped(ctx, chainID, options...)
}

func (e endpoint) GetVMs(ctx context.Context, options ...rpc.Option) (map[ids.ID][]string, error) {
	return e.info.GetVMs(ctx, options...)
}

func (e endpoint) Peers(ctx context.Context, nodeIDs []ids.NodeID, options ...rpc.Option) ([]info.Peer, error) {
	return e.info.Peers(ctx, nodeIDs, options...)
}

func (e endpoint) WalletState(ctx context.Context, addrs set.Set[ids.ShortID]) (*pbuilder.Context, walletcommon.UTXOs, error) {
	_, pctx, utxos, err := primary.FetchPState(ctx, e.uri, addrs)
	return pctx, utxos, err
}

// NodeFacts is what one node says about itself, and what its peers say
// about it.
type NodeFacts struct {
	URI       string     `json:"uri"`
	NodeID    ids.NodeID `json:"nodeID"`
	NetworkID uint32     `json:"networkID"`
	// Bootstrapped: the node's P-chain is bootstrapped.
	Bootstrapped bool `json:"bootstrapped"`
	// HasVM: info.getVMs lists the S-Chain VM ID (the plugin is installed
	// in the node's plugin directory under that name).
	HasVM bool `json:"hasVM"`
	// Primary is the node's primary-network validation (nil: none), as the
	// issuing node's P-chain has it.
	Primary *subnet.Primary `json:"primary,omitempty"`
	// Tracks: whether the node tracks the subnet, as a peer among the
	// deployment's nodes reports it (nil: no peer reported it, or no
	// subnet yet).
	Tracks *bool `json:"tracks,omitempty"`
	// Serves: the node runs the chain and finished bootstrapping it.
	Serves bool `json:"serves"`
	// Err: the node did not answer.
	Err string `json:"error,omitempty"`
}

// readNode gathers what a node says about itself. pchain is the endpoint
// whose P-chain answers for the primary validation (the issuing node).
func readNode(ctx context.Context, uri string, e Endpoint, pchain subnet.Node, vmID, chainID ids.ID) NodeFacts {
	f := NodeFacts{URI: uri}
	fail := func(call string, err error) NodeFacts {
		f.Err = fmt.Sprintf("%s: %v", call, err)
		return f
	}
	var err error
	if f.NodeID, _, err = e.GetNodeID(ctx); err != nil {
		return fail("info.getNodeID", err)
	}
	if f.NetworkID, err = e.GetNetworkID(ctx); err != nil {
		return fail("info.getNetworkID", err)
	}
	if f.Bootstrapped, err = e.IsBootstrapped(ctx, "P"); err != nil {
		return fail("info.isBootstrapped(P)", err)
	}
	vms, err := e.GetVMs(ctx)
	if err != nil {
		return fail("info.getVMs", err)
	}
	_, f.HasVM = vms[vmID]
	if f.Primary, err = subnet.ReadPrimary(ctx, pchain, f.NodeID); err != nil {
		return fail("platform.getCurrentValidators", err)
	}
	if chainID != ids.Empty {
		// An error means the node knows no such chain: it does not run it.
		f.Serves, _ = e.IsBootstrapped(ctx, chainID.String())
	}
	return f
}

// tracking asks every node which of the others track subnetID (the
// handshake tells each peer the subnets a node tracks).
func tracking(ctx context.Context, facts []NodeFacts, eps []Endpoint, subnetID ids.ID) {
	var nodeIDs []ids.NodeID
	for _, f := range facts {
		if f.Err == "" {
			nodeIDs = append(nodeIDs, f.NodeID)
		}
	}
	for i, e := range eps {
		if facts[i].Err != "" {
			continue
		}
		peers, err := e.Peers(ctx, nodeIDs)
		if err != nil {
			continue
		}
		for _, p := range peers {
			j := slices.IndexFunc(facts, func(f NodeFacts) bool { return f.NodeID == p.ID })
			if j < 0 || j == i {
				continue
			}
			tracks := p.TrackedSubnets.Contains(subnetID)
			facts[j].Tracks = &tracks
		}
	}
}

// Problem is a node that cannot take part as it is, and what fixes it.
type Problem struct {
	URI    string `json:"uri"`
	NodeID string `json:"nodeID,omitempty"`
	What   string `json:"what"`
	Fix    string `json:"fix"`
}

func (p Problem) String() string {
	who := p.URI
	if p.NodeID != "" {
		who += " (" + p.NodeID + ")"
	}
	return fmt.Sprintf("%s: %s; %s", who, p.What, p.Fix)
}

// ErrNodes: a node cannot validate the chain as it is (Problems say why
// and what to do).
var ErrNodes = fmt.Errorf("deploy: nodes not ready")

// NodesError lists the problems of the nodes.
type NodesError struct{ Problems []Problem }

func (e *NodesError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = "  " + p.String()
	}
	return fmt.Sprintf("%v:\n%s", ErrNodes, strings.Join(lines, "\n"))
}

func (e *NodesError) Unwrap() error { return ErrNodes }

// Check finds what keeps the nodes from validating a chain of vmID on the
// network networkID: unreachable, another network, not bootstrapped, the
// plugin missing, not a primary-network validator, or the same node given
// twice. It reads nothing: every refusal is decided from the facts.
func Check(facts []NodeFacts, networkID uint32, vmID ids.ID, pluginDirHint string) []Problem {
	var out []Problem
	seen := map[ids.NodeID]string{}
	for _, f := range facts {
		p := Problem{URI: f.URI}
		if f.NodeID != ids.EmptyNodeID {
			p.NodeID = f.NodeID.String()
		}
		add := func(what, fix string) {
			p.What, p.Fix = what, fix
			out = append(out, p)
		}
		switch {
		case f.Err != "":
			add("unreachable ("+f.Err+")", "check the URI and that the node's HTTP API is reachable from here (--http-host)")
			continue
		case f.NetworkID != networkID:
			add(fmt.Sprintf("network ID %d, the others' is %d", f.NetworkID, networkID), "every validator must be on the same network (--network-id)")
		}
		if other, ok := seen[f.NodeID]; ok {
			add("the same node as "+other, "give each validator once")
		}
		seen[f.NodeID] = f.URI
		if !f.Bootstrapped {
			add("its P-chain is still bootstrapping", "wait until info.isBootstrapped(P) is true, then run again")
		}
		if !f.HasVM {
			add(fmt.Sprintf("info.getVMs does not list the S-Chain VM %s", vmID),
				fmt.Sprintf("install the plugin as %s/%s and restart the node", pluginDirHint, vmID))
		}
		if f.Primary == nil {
			add("not a validator of the primary network", "a subnet validator must validate the primary network first (AddPermissionlessValidatorTx)")
		}
	}
	return out
}
