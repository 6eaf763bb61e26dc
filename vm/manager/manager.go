// Package manager is S-Chain as its L1's validator manager: the chain
// decides, by consensus, to remove a dead validator from the P-chain set
// (package execute, removal.go), and each validator signs, over ACP-118
// signature requests, the Warp message that sets that validator's weight
// to zero on the P-chain. This package holds what the L1 conversion and
// the signing side share: the manager address the conversion names, the
// builder of a removal's unsigned Warp message, and the rule deciding
// whether this node signs one (Rule).
//
// It is for the VM (which routes ACP-118 requests to Rule, see
// certifier.Rule), for the deployment that converts the subnet (Address),
// and for the code that will gather the signatures and submit
// SetL1ValidatorWeightTx (RemovalMessage). It is not execution: the rule
// reads this node's peers and the P-chain's current set, but never signs a
// removal its accepted state does not hold.
package manager

import (
	"context"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/message"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp/payload"

	"github.com/s-chain/schain/state"
)

// Address is the source address of S-Chain's validator manager: the
// conversion of the subnet to an L1 (ConvertSubnetToL1Tx) names the chain's
// ID and these bytes as the manager, and the P-chain accepts a weight
// change only from a Warp message of that chain whose AddressedCall carries
// this source address. It is fixed: changing it would orphan every
// converted L1. ASCII, no terminator.
const Address = "schain/validator-manager/v1"

// Codes of the refusals the removal rule answers signature requests with
// (distinct from certifier's statement codes). CodeNoValidators is worth
// asking again soon; CodeNoDecision and CodeConnected once the chain or this
// node's view changes; the others never.
const (
	// CodeNotManager: not a message of this chain's validator manager
	// (another network, another source chain or another source address).
	CodeNotManager int32 = 16
	// CodeNotRemoval: the weight is not 0. This node signs only removals.
	CodeNotRemoval int32 = 17
	// CodeNoValidators: this node could not read the P-chain's current
	// validator set of the chain's subnet.
	CodeNoValidators int32 = 18
	// CodeUnknownValidation: the P-chain's current set of the subnet has
	// no L1 validator with that validation ID.
	CodeUnknownValidation int32 = 19
	// CodeStaleNonce: the nonce is below the validator's MinNonce on the
	// P-chain (the P-chain would refuse it).
	CodeStaleNonce int32 = 20
	// CodeNoDecision: this node's accepted state holds no removal decision
	// for the validator's node.
	CodeNoDecision int32 = 21
	// CodeConnected: this node is connected to the validator (or is the
	// validator): in its own view the validator is alive.
	CodeConnected int32 = 22
)

// RemovalMessage is the unsigned Warp message that removes validationID
// from the L1's P-chain set: from chainID, this network's S-Chain, an
// AddressedCall from Address carrying an L1ValidatorWeight of weight 0 and
// the given nonce (at least the validator's MinNonce on the P-chain).
func RemovalMessage(networkID uint32, chainID, validationID ids.ID, nonce uint64) (*warp.UnsignedMessage, error) {
	w, err := message.NewL1ValidatorWeight(validationID, nonce, 0)
	if err != nil {
		return nil, fmt.Errorf("manager: weight message: %w", err)
	}
	call, err := payload.NewAddressedCall([]byte(Address), w.Bytes())
	if err != nil {
		return nil, fmt.Errorf("manager: addressed call: %w", err)
	}
	return warp.NewUnsignedMessage(networkID, chainID, call.Bytes())
}

// ParseWeight reads msg's payload as an AddressedCall carrying an
// L1ValidatorWeight; ok is false for any other payload. It checks neither
// the message's origin nor the address (Rule does).
func ParseWeight(msg *warp.UnsignedMessage) (call *payload.AddressedCall, w *message.L1ValidatorWeight, ok bool) {
	call, err := payload.ParseAddressedCall(msg.Payload)
	if err != nil {
		return nil, nil, false
	}
	w, err = message.ParseL1ValidatorWeight(call.Payload)
	if err != nil {
		return nil, nil, false
	}
	return call, w, true
}

// CurrentValidators is the P-chain's current validator set
// (validators.State's GetCurrentValidatorSet): keyed by validation ID, with
// each L1 validator's node ID, weight and MinNonce.
type CurrentValidators interface {
	GetCurrentValidatorSet(ctx context.Context, subnetID ids.ID) (map[ids.ID]*validators.GetCurrentValidatorOutput, uint64, error)
}

// Decisions are the removal decisions of this node's accepted state
// (state.Reader; the chain's accepted view, never a processing block's).
type Decisions interface {
	Removal(nodeID ids.NodeID) (state.Removal, bool, error)
}

// Peers is this node's view of who is alive: the nodes it is connected to
// now (*p2p.Peers, fed by the VM's Connected and Disconnected).
type Peers interface {
	Has(nodeID ids.NodeID) bool
}

// Config is what the rule needs from its node.
type Config struct {
	NetworkID uint32
	ChainID   ids.ID
	SubnetID  ids.ID
	// NodeID is this node: it never signs its own removal.
	NodeID ids.NodeID
	// Validators is the P-chain's current set (nil: this node signs no
	// removal, CodeNoValidators).
	Validators CurrentValidators
	Decisions  Decisions
	Peers      Peers
}

// Removal is a removal message the rule accepted to sign, as it read it.
type Removal struct {
	ValidationID ids.ID
	NodeID       ids.NodeID
	Nonce        uint64
	// Decision is the accepted state's decision about NodeID.
	Decision state.Removal
}

// Rule decides whether this node signs an L1ValidatorWeight message. It
// signs one iff all of these hold:
//
//   - it is this chain's manager's: this network, this chain as source,
//     Address as source address;
//   - its weight is 0 (a removal);
//   - the P-chain's current set of the chain's subnet has an L1 validator
//     with its validation ID, and its nonce is at least that validator's
//     MinNonce;
//   - this node's accepted state holds a removal decision for that
//     validator's node;
//   - this node is not that node, and is not connected to it now.
//
// The last condition is this node's own witness that the validator is
// gone: a Byzantine minority that got a live validator decided (by
// censoring its heartbeats) finds the honest validators still connected to
// it, and cannot gather the Warp quorum. Rule is safe for concurrent use.
type Rule struct {
	cfg Config
}

// New returns the rule of a node.
func New(cfg Config) *Rule { return &Rule{cfg: cfg} }

// Claims reports whether msg is the rule's to judge: its payload is an
// L1ValidatorWeight in an AddressedCall, whatever its origin.
func (r *Rule) Claims(msg *warp.UnsignedMessage) bool {
	_, _, ok := ParseWeight(msg)
	return ok
}

// Verify is acp118's question: may this node sign msg? nil means yes.
func (r *Rule) Verify(ctx context.Context, msg *warp.UnsignedMessage, _ []byte) *common.AppError {
	_, err := r.Check(ctx, msg)
	return err
}

// Check is Verify with the removal it read: the removal this node signs,
// or the refusal with its code.
func (r *Rule) Check(ctx context.Context, msg *warp.UnsignedMessage) (Removal, *common.AppError) {
	call, w, ok := ParseWeight(msg)
	switch {
	case !ok:
		return Removal{}, refuse(CodeNotManager, "the message is not an L1 validator weight message")
	case msg.NetworkID != r.cfg.NetworkID:
		return Removal{}, refuse(CodeNotManager, "a message of network %d, this node is on %d", msg.NetworkID, r.cfg.NetworkID)
	case msg.SourceChainID != r.cfg.ChainID:
		return Removal{}, refuse(CodeNotManager, "a message of chain %s, this node's manager is chain %s", msg.SourceChainID, r.cfg.ChainID)
	case string(call.SourceAddress) != Address:
		return Removal{}, refuse(CodeNotManager, "source address %x is not the manager's (%q)", call.SourceAddress, Address)
	case w.Weight != 0:
		return Removal{}, refuse(CodeNotRemoval, "weight %d: this node signs only removals (weight 0)", w.Weight)
	case r.cfg.Validators == nil:
		return Removal{}, refuse(CodeNoValidators, "this node does not read the P-chain's current validators")
	}
	set, _, err := r.cfg.Validators.GetCurrentValidatorSet(ctx, r.cfg.SubnetID)
	if err != nil {
		return Removal{}, refuse(CodeNoValidators, "the P-chain's current validators of subnet %s: %v", r.cfg.SubnetID, err)
	}
	v, ok := set[w.ValidationID]
	switch {
	case !ok || v == nil:
		return Removal{}, refuse(CodeUnknownValidation, "validation %s is not in the P-chain's current set of subnet %s", w.ValidationID, r.cfg.SubnetID)
	case !v.IsL1Validator:
		return Removal{}, refuse(CodeUnknownValidation, "validation %s (node %s) is not an L1 validator: the subnet is not an L1", w.ValidationID, v.NodeID)
	case w.Nonce < v.MinNonce:
		return Removal{}, refuse(CodeStaleNonce, "nonce %d is below validation %s's MinNonce %d", w.Nonce, w.ValidationID, v.MinNonce)
	}
	rm := Removal{ValidationID: w.ValidationID, NodeID: v.NodeID, Nonce: w.Nonce}
	d, decided, err := r.cfg.Decisions.Removal(v.NodeID)
	switch {
	case err != nil:
		return Removal{}, refuse(CodeNoDecision, "reading the removal decision of %s: %v", v.NodeID, err)
	case !decided:
		return Removal{}, refuse(CodeNoDecision, "this node's accepted state holds no removal decision for %s", v.NodeID)
	case v.NodeID == r.cfg.NodeID:
		return Removal{}, refuse(CodeConnected, "%s is this node: it is alive", v.NodeID)
	case r.cfg.Peers == nil:
		return Removal{}, refuse(CodeConnected, "this node has no view of its peers: it cannot witness that %s is gone", v.NodeID)
	case r.cfg.Peers.Has(v.NodeID):
		return Removal{}, refuse(CodeConnected, "this node is connected to %s: in its view the validator is alive", v.NodeID)
	}
	rm.Decision = d
	return rm, nil
}

func refuse(code int32, format string, args ...any) *common.AppError {
	return &common.AppError{Code: code, Message: "manager: " + fmt.Sprintf(format, args...)}
}
