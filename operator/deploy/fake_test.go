package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/api/info"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/network/peer"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/crypto/secp256k1"
	"github.com/ava-labs/avalanchego/utils/rpc"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/components/avax"
	"github.com/ava-labs/avalanchego/vms/components/gas"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	platformapi "github.com/ava-labs/avalanchego/vms/platformvm/api"
	"github.com/ava-labs/avalanchego/vms/platformvm/signer"
	"github.com/ava-labs/avalanchego/vms/platformvm/status"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
	"github.com/ava-labs/avalanchego/vms/secp256k1fx"
	"github.com/stretchr/testify/require"

	pbuilder "github.com/ava-labs/avalanchego/wallet/chain/p/builder"
	walletcommon "github.com/ava-labs/avalanchego/wallet/subnet/primary/common"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/vm"
)

var pTime = time.Unix(1_800_000_000, 0)

// pchain is a fake P-chain shared by fake nodes: a real UTXO set (a
// transaction whose inputs are gone is refused, as the P-chain would),
// subnets, validators and chains as committed transactions make them.
type pchain struct {
	mu      sync.Mutex
	avax    ids.ID
	utxos   map[ids.ID]*avax.UTXO
	subnets map[ids.ID]*secp256k1fx.OutputOwners
	vdrs    map[ids.ID][]platformvm.ClientPermissionlessValidator
	chains  map[ids.ID]ids.ID // chain -> subnet
	status  map[ids.ID]status.Status
	// issued counts issueTx calls that committed, by kind.
	issued map[string]int
	// loseAnswer: the next issueTx of that kind commits, but its answer is
	// lost (a transport error), as when the link drops after sending.
	loseAnswer map[string]bool
	nodes      []*fakeNode
}

type fakeNode struct {
	uri          string
	id           ids.NodeID
	networkID    uint32
	bootstrapped bool
	hasVM        bool
	tracks       set.Set[ids.ID]
	down         bool
}

func newPChain(t *testing.T, key *secp256k1.PrivateKey, n int) *pchain {
	t.Helper()
	p := &pchain{
		avax: ids.GenerateTestID(), utxos: map[ids.ID]*avax.UTXO{},
		subnets: map[ids.ID]*secp256k1fx.OutputOwners{}, vdrs: map[ids.ID][]platformvm.ClientPermissionlessValidator{},
		chains: map[ids.ID]ids.ID{}, status: map[ids.ID]status.Status{}, issued: map[string]int{}, loseAnswer: map[string]bool{},
	}
	p.fund(key, 2, 1_000_000_000)
	for i := range n {
		nd := &fakeNode{uri: fmt.Sprintf("http://198.18.0.%d:9650", i+1), id: ids.GenerateTestNodeID(), networkID: 1337, bootstrapped: true, hasVM: true, tracks: set.Set[ids.ID]{}}
		p.nodes = append(p.nodes, nd)
		p.vdrs[constants.PrimaryNetworkID] = append(p.vdrs[constants.PrimaryNetworkID], platformvm.ClientPermissionlessValidator{
			ClientStaker: platformvm.ClientStaker{NodeID: nd.id, Weight: 2000, StartTime: uint64(pTime.Add(-time.Hour).Unix()), EndTime: uint64(pTime.Add(365 * 24 * time.Hour).Unix())},
			Connected:    ptr(true),
		})
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// fund gives key n fresh UTXOs of amount each.
func (p *pchain) fund(key *secp256k1.PrivateKey, n int, amount uint64) {
	for range n {
		u := &avax.UTXO{
			UTXOID: avax.UTXOID{TxID: ids.GenerateTestID()},
			Asset:  avax.Asset{ID: p.avax},
			Out:    &secp256k1fx.TransferOutput{Amt: amount, OutputOwners: secp256k1fx.OutputOwners{Threshold: 1, Addrs: []ids.ShortID{key.Address()}}},
		}
		p.utxos[u.InputID()] = u
	}
}

// spendAll spends every UTXO (another wallet of the same key), and funds
// the key again.
func (p *pchain) spendAll(key *secp256k1.PrivateKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.utxos = map[ids.ID]*avax.UTXO{}
	p.fund(key, 2, 1_000_000_000)
}

func (p *pchain) count(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.issued[kind]
}

var errLost = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}

func (p *pchain) issue(b []byte) (ids.ID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tx, err := txs.Parse(txs.Codec, b)
	if err != nil {
		return ids.Empty, err
	}
	id := tx.ID()
	if p.status[id] == status.Committed {
		return ids.Empty, fmt.Errorf("tx %s already accepted", id)
	}
	var base *txs.BaseTx
	kind := ""
	switch u := tx.Unsigned.(type) {
	case *txs.CreateSubnetTx:
		base, kind = &u.BaseTx, string(CreateSubnet)
	case *txs.AddSubnetValidatorTx:
		base, kind = &u.BaseTx, string(AddValidator)
		if _, ok := p.subnets[u.Subnet]; !ok {
			return ids.Empty, fmt.Errorf("subnet %s does not exist", u.Subnet)
		}
	case *txs.CreateChainTx:
		base, kind = &u.BaseTx, string(CreateChain)
		if _, ok := p.subnets[u.SubnetID]; !ok {
			return ids.Empty, fmt.Errorf("subnet %s does not exist", u.SubnetID)
		}
	default:
		return ids.Empty, fmt.Errorf("unexpected %T", u)
	}
	for in := range base.InputIDs() {
		if _, ok := p.utxos[in]; !ok {
			return ids.Empty, fmt.Errorf("failed to read consumed UTXO %s: not found", in)
		}
	}
	for in := range base.InputIDs() {
		delete(p.utxos, in)
	}
	for _, u := range tx.UTXOs() {
		p.utxos[u.InputID()] = u
	}
	switch u := tx.Unsigned.(type) {
	case *txs.CreateSubnetTx:
		p.subnets[id] = u.Owner.(*secp256k1fx.OutputOwners)
	case *txs.AddSubnetValidatorTx:
		p.vdrs[u.Subnet] = append(p.vdrs[u.Subnet], platformvm.ClientPermissionlessValidator{ClientStaker: platformvm.ClientStaker{
			TxID: id, NodeID: u.NodeID(), Weight: u.Weight(), StartTime: uint64(pTime.Unix()), EndTime: uint64(u.EndTime().Unix()),
		}})
	case *txs.CreateChainTx:
		p.chains[id] = u.SubnetID
	}
	p.status[id] = status.Committed
	p.issued[kind]++
	if p.loseAnswer[kind] {
		delete(p.loseAnswer, kind)
		return ids.Empty, errLost
	}
	return id, nil
}

// endpoint is node i's view.
func (p *pchain) endpoint(uri string) Endpoint {
	for _, n := range p.nodes {
		if n.uri == uri {
			return &fakeEndpoint{p: p, n: n}
		}
	}
	panic("unknown uri " + uri)
}

func (p *pchain) uris() []string {
	var out []string
	for _, n := range p.nodes {
		out = append(out, n.uri)
	}
	return out
}

type fakeEndpoint struct {
	p *pchain
	n *fakeNode
}

var errDown = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}

func (e *fakeEndpoint) check() error {
	if e.n.down {
		return errDown
	}
	return nil
}

func (e *fakeEndpoint) GetNodeID(context.Context, ...rpc.Option) (ids.NodeID, *signer.ProofOfPossession, error) {
	return e.n.id, nil, e.check()
}

func (e *fakeEndpoint) GetNetworkID(context.Context, ...rpc.Option) (uint32, error) {
	return e.n.networkID, e.check()
}

func (e *fakeEndpoint) IsBootstrapped(_ context.Context, chain string, _ ...rpc.Option) (bool, error) {
	if err := e.check(); err != nil {
		return false, err
	}
	if chain == "P" {
		return e.n.bootstrapped, nil
	}
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	id, _ := ids.FromString(chain)
	s, ok := e.p.chains[id]
	if !ok || !e.n.tracks.Contains(s) {
		return false, fmt.Errorf("there is no chain with alias/ID '%s'", chain)
	}
	return true, nil
}

func (e *fakeEndpoint) GetVMs(context.Context, ...rpc.Option) (map[ids.ID][]string, error) {
	out := map[ids.ID][]string{constants.AVMID: {"avm"}}
	if e.n.hasVM {
		out[vm.ID] = nil
	}
	return out, e.check()
}

func (e *fakeEndpoint) Peers(_ context.Context, nodeIDs []ids.NodeID, _ ...rpc.Option) ([]info.Peer, error) {
	var out []info.Peer
	for _, n := range e.p.nodes {
		if n == e.n || n.down || len(nodeIDs) > 0 && !slices.Contains(nodeIDs, n.id) {
			continue
		}
		out = append(out, info.Peer{Info: peer.Info{ID: n.id, TrackedSubnets: n.tracks}})
	}
	return out, e.check()
}

func (e *fakeEndpoint) GetHeight(context.Context, ...rpc.Option) (uint64, error) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return uint64(len(e.p.status)), e.check()
}

func (e *fakeEndpoint) GetTimestamp(context.Context, ...rpc.Option) (time.Time, error) {
	return pTime, e.check()
}

func (e *fakeEndpoint) GetSubnet(_ context.Context, id ids.ID, _ ...rpc.Option) (platformvm.GetSubnetClientResponse, error) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	o, ok := e.p.subnets[id]
	if !ok {
		return platformvm.GetSubnetClientResponse{}, errors.New("not found")
	}
	return platformvm.GetSubnetClientResponse{IsPermissioned: true, ControlKeys: o.Addrs, Threshold: o.Threshold}, e.check()
}

func (e *fakeEndpoint) GetCurrentValidators(_ context.Context, id ids.ID, nodeIDs []ids.NodeID, _ ...rpc.Option) ([]platformvm.ClientPermissionlessValidator, error) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	var out []platformvm.ClientPermissionlessValidator
	for _, v := range e.p.vdrs[id] {
		if len(nodeIDs) == 0 || slices.Contains(nodeIDs, v.NodeID) {
			out = append(out, v)
		}
	}
	return out, e.check()
}

func (e *fakeEndpoint) ValidatedBy(_ context.Context, chainID ids.ID, _ ...rpc.Option) (ids.ID, error) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return e.p.chains[chainID], e.check()
}

func (e *fakeEndpoint) GetValidatorsAt(context.Context, ids.ID, platformapi.Height, ...rpc.Option) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	return nil, errors.New("not used")
}

func (e *fakeEndpoint) GetBlockByHeight(context.Context, uint64, ...rpc.Option) ([]byte, error) {
	return nil, errors.New("not used")
}

func (e *fakeEndpoint) IssueTx(_ context.Context, b []byte, _ ...rpc.Option) (ids.ID, error) {
	if err := e.check(); err != nil {
		return ids.Empty, err
	}
	return e.p.issue(b)
}

func (e *fakeEndpoint) GetTxStatus(_ context.Context, id ids.ID, _ ...rpc.Option) (*platformvm.GetTxStatusResponse, error) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	s, ok := e.p.status[id]
	if !ok {
		s = status.Unknown
	}
	return &platformvm.GetTxStatusResponse{Status: s}, e.check()
}

func (e *fakeEndpoint) WalletState(_ context.Context, addrs set.Set[ids.ShortID]) (*pbuilder.Context, walletcommon.UTXOs, error) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	utxos := walletcommon.NewUTXOs()
	for _, u := range e.p.utxos {
		out, ok := u.Out.(*secp256k1fx.TransferOutput)
		if !ok || !slices.ContainsFunc(out.Addrs, addrs.Contains) {
			continue
		}
		if err := utxos.AddUTXO(context.Background(), constants.PlatformChainID, constants.PlatformChainID, u); err != nil {
			return nil, nil, err
		}
	}
	pctx := &pbuilder.Context{NetworkID: 1337, AVAXAssetID: e.p.avax, ComplexityWeights: gas.Dimensions{1, 1000, 1000, 4}, GasPrice: 1}
	return pctx, utxos, e.check()
}

// fakeChain is a node's S-Chain API for status.
type fakeChain struct {
	height uint64
	blocks map[uint64]ids.ID
}

func (c *fakeChain) GetNode(context.Context) (*api.NodeReply, error) {
	return &api.NodeReply{Height: c.height, StateRoot: api.ID(c.blocks[c.height])}, nil
}

func (c *fakeChain) GetBlock(_ context.Context, h uint64) (*api.BlockReply, error) {
	id, ok := c.blocks[h]
	if !ok {
		return nil, errors.New("not found")
	}
	return &api.BlockReply{Height: h, ID: api.ID(id)}, nil
}

func newKey(t *testing.T) *secp256k1.PrivateKey {
	t.Helper()
	k, err := secp256k1.NewPrivateKey()
	require.NoError(t, err)
	return k
}
