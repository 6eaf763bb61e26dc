// Package subnet reads and changes S-Chain's validator set on the P-chain.
//
// S-Chain pins ranges to the validators that heartbeat (docs/concepts/liveness.md),
// so a dead validator loses its ranges without anybody's help. What the
// chain cannot do for itself is leave the dead validator's proposer slots:
// avalanchego's proposer VM keeps giving it a 5 s slot at the heights it
// was drawn for, and every range waits for that slot to pass, until the
// validator is removed from the subnet on the P-chain. That takes a
// transaction signed with the subnet owner's key, which no validator holds:
// this package is the operator's side of it.
//
// Read gathers the facts (the subnet's owner and current validators) from a
// node's P-chain API; the checks on Facts are pure, so every refusal is
// decided and tested without a network. An Admin holds the owner's key,
// plans a removal or an addition (checks, then builds the transaction and
// its fee without issuing it: a dry run) and issues a plan, waiting until
// the P-chain commits or drops it.
//
// Only permissioned subnets (created with CreateSubnetTx and never converted
// to an L1) are handled: their validators are added with
// AddSubnetValidatorTx (node ID, weight, end time; the BLS key is the one
// the node registered on the primary network) and removed with
// RemoveSubnetValidatorTx. An L1's validators are managed by its validator
// manager contract instead, which the checks name.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package subnet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ava-labs/avalanchego/api/info"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/rpc"
	"github.com/ava-labs/avalanchego/vms/platformvm"
	platformapi "github.com/ava-labs/avalanchego/vms/platformvm/api"

	"github.com/s-chain/schain/certificate"
)

// Node is the part of an avalanchego node's P-chain and info APIs this
// package reads. NewNode returns the real one; tests give a fake.
type Node interface {
	GetNetworkID(ctx context.Context, options ...rpc.Option) (uint32, error)
	GetHeight(ctx context.Context, options ...rpc.Option) (uint64, error)
	GetTimestamp(ctx context.Context, options ...rpc.Option) (time.Time, error)
	GetSubnet(ctx context.Context, subnetID ids.ID, options ...rpc.Option) (platformvm.GetSubnetClientResponse, error)
	GetCurrentValidators(ctx context.Context, subnetID ids.ID, nodeIDs []ids.NodeID, options ...rpc.Option) ([]platformvm.ClientPermissionlessValidator, error)
	ValidatedBy(ctx context.Context, blockchainID ids.ID, options ...rpc.Option) (ids.ID, error)
	GetValidatorsAt(ctx context.Context, subnetID ids.ID, height platformapi.Height, options ...rpc.Option) (map[ids.NodeID]*validators.GetValidatorOutput, error)
	GetBlockByHeight(ctx context.Context, height uint64, options ...rpc.Option) ([]byte, error)
}

// nodeAPI is a node's P-chain client and the one info call Read needs.
type nodeAPI struct {
	*platformvm.Client
	info *info.Client
}

// NewNode talks to the node at uri (http://host:port, no path).
func NewNode(uri string) Node {
	return nodeAPI{Client: platformvm.NewClient(uri), info: info.NewClient(uri)}
}

func (n nodeAPI) GetNetworkID(ctx context.Context, options ...rpc.Option) (uint32, error) {
	return n.info.GetNetworkID(ctx, options...)
}

// Owner is who may change a permissioned subnet's validators: Threshold of
// the Addresses must sign, and not before Locktime (unix seconds).
type Owner struct {
	Addresses []ids.ShortID `json:"addresses"`
	Threshold uint32        `json:"threshold"`
	Locktime  uint64        `json:"locktime"`
}

// Validator is a current validator of the subnet on the P-chain.
type Validator struct {
	NodeID ids.NodeID `json:"nodeID"`
	Weight uint64     `json:"weight"`
	// Start is when it began validating the subnet (the P-chain time its
	// transaction was committed at); End when the P-chain removes it.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	TxID  ids.ID    `json:"txID"`
}

// Facts is what the P-chain says about the subnet, read from one node.
type Facts struct {
	NetworkID uint32 `json:"networkID"`
	SubnetID  ids.ID `json:"subnetID"`
	// Height and Time are the node's P-chain height and time when read.
	Height uint64    `json:"pChainHeight"`
	Time   time.Time `json:"pChainTime"`
	Owner  Owner     `json:"owner"`
	// ConversionID is set once the subnet was converted to an L1;
	// TransformationTxID once it was made permissionless (pre-Etna).
	// Either way its validators are no longer the owner's to add or remove.
	ConversionID       ids.ID `json:"conversionID"`
	TransformationTxID ids.ID `json:"transformationTxID"`
	// Validators are the current validators, sorted by node ID.
	Validators []Validator `json:"validators"`
}

// Read gathers the facts about subnetID from node.
func Read(ctx context.Context, node Node, subnetID ids.ID) (*Facts, error) {
	f := &Facts{SubnetID: subnetID}
	var err error
	if f.NetworkID, err = node.GetNetworkID(ctx); err != nil {
		return nil, fmt.Errorf("%w: info.getNetworkID: %w", ErrPChainAPI, err)
	}
	if f.Height, err = node.GetHeight(ctx); err != nil {
		return nil, fmt.Errorf("%w: platform.getHeight: %w", ErrPChainAPI, err)
	}
	if f.Time, err = node.GetTimestamp(ctx); err != nil {
		return nil, fmt.Errorf("%w: platform.getTimestamp: %w", ErrPChainAPI, err)
	}
	s, err := node.GetSubnet(ctx, subnetID)
	if err != nil {
		return nil, fmt.Errorf("%w: subnet %s: %w", ErrNoSubnet, subnetID, err)
	}
	f.Owner = Owner{Addresses: s.ControlKeys, Threshold: s.Threshold, Locktime: s.Locktime}
	f.ConversionID, f.TransformationTxID = s.ConversionID, s.SubnetTransformationTxID
	vs, err := node.GetCurrentValidators(ctx, subnetID, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: platform.getCurrentValidators of %s: %w", ErrPChainAPI, subnetID, err)
	}
	for _, v := range vs {
		f.Validators = append(f.Validators, Validator{
			NodeID: v.NodeID, Weight: v.Weight, TxID: v.TxID,
			Start: time.Unix(int64(v.StartTime), 0), End: time.Unix(int64(v.EndTime), 0),
		})
	}
	slices.SortFunc(f.Validators, func(a, b Validator) int { return a.NodeID.Compare(b.NodeID) })
	return f, nil
}

// Validator returns the current validator nodeID, if it is one.
func (f *Facts) Validator(nodeID ids.NodeID) (Validator, bool) {
	i := slices.IndexFunc(f.Validators, func(v Validator) bool { return v.NodeID == nodeID })
	if i < 0 {
		return Validator{}, false
	}
	return f.Validators[i], true
}

// Primary is a validator of the primary network, which every subnet
// validator must be for the whole of its subnet validation.
type Primary struct {
	NodeID ids.NodeID `json:"nodeID"`
	Start  time.Time  `json:"start"`
	End    time.Time  `json:"end"`
	// PublicKey is the BLS key the node registered (hex, 0x-prefixed;
	// empty if it registered none): the key S-Chain verifies its
	// signatures with once it validates the subnet.
	PublicKey string `json:"publicKey,omitempty"`
	// Connected: whether the node the facts were read from is connected to
	// it (nil: not reported).
	Connected *bool `json:"connected,omitempty"`
}

// ReadPrimary returns nodeID's primary-network validation, or nil if it is
// not a current validator of the primary network.
func ReadPrimary(ctx context.Context, node Node, nodeID ids.NodeID) (*Primary, error) {
	vs, err := node.GetCurrentValidators(ctx, constants.PrimaryNetworkID, []ids.NodeID{nodeID})
	if err != nil {
		return nil, fmt.Errorf("%w: platform.getCurrentValidators of the primary network: %w", ErrPChainAPI, err)
	}
	for _, v := range vs {
		if v.NodeID != nodeID {
			continue
		}
		p := &Primary{NodeID: v.NodeID, Start: time.Unix(int64(v.StartTime), 0), End: time.Unix(int64(v.EndTime), 0), Connected: v.Connected}
		if v.Signer != nil {
			p.PublicKey = fmt.Sprintf("0x%x", v.Signer.PublicKey[:])
		}
		return p, nil
	}
	return nil, nil
}

// ValidatorSetAt is the subnet's validator set at a P-chain height as this
// node's P-chain has it: what a finality certificate of that height is
// checked against (package certificate).
func ValidatorSetAt(ctx context.Context, node Node, subnetID ids.ID, height uint64) (certificate.ValidatorSet, error) {
	vals, err := node.GetValidatorsAt(ctx, subnetID, platformapi.Height(height))
	if err != nil {
		return certificate.ValidatorSet{}, fmt.Errorf("platform.getValidatorsAt(%s, %d): %w", subnetID, height, err)
	}
	return certificate.NewValidatorSet(subnetID, height, vals), nil
}

// CertificateSet is what a finality certificate of chainID at pChainHeight
// is checked against, all from node's P-chain (never from an S-Chain
// node): the network, the subnet's validator set at that height, and the
// height the chain was created at (createdAt when known, else
// ChainCreatedAt with hint).
func CertificateSet(ctx context.Context, node Node, chainID ids.ID, pChainHeight, createdAt, hint uint64) (certificate.ValidatorSet, error) {
	nid, err := node.GetNetworkID(ctx)
	if err != nil {
		return certificate.ValidatorSet{}, fmt.Errorf("info.getNetworkID: %w", err)
	}
	subnetID, err := SubnetOf(ctx, node, chainID)
	if err != nil {
		return certificate.ValidatorSet{}, err
	}
	if createdAt == 0 {
		if createdAt, err = ChainCreatedAt(ctx, node, chainID, pChainHeight, hint); err != nil {
			return certificate.ValidatorSet{}, err
		}
	}
	vs, err := ValidatorSetAt(ctx, node, subnetID, pChainHeight)
	if err != nil {
		return vs, err
	}
	vs.NetworkID, vs.ChainCreatedAt = nid, createdAt
	return vs, nil
}

// SubnetOf returns the subnet that validates chainID.
func SubnetOf(ctx context.Context, node Node, chainID ids.ID) (ids.ID, error) {
	id, err := node.ValidatedBy(ctx, chainID)
	if err != nil {
		return ids.Empty, fmt.Errorf("%w: platform.validatedBy(%s): %w", ErrNoSubnet, chainID, err)
	}
	return id, nil
}
