package subnet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/utils/constants"
	"github.com/ava-labs/avalanchego/utils/formatting/address"
	"github.com/ava-labs/avalanchego/vms/platformvm/txs"
)

var (
	// ErrPChainAPI: a node's P-chain or info API call failed.
	ErrPChainAPI = errors.New("subnet: P-chain API call failed")
	// ErrNoSubnet: the P-chain knows no such subnet (or no subnet validates
	// the chain).
	ErrNoSubnet = errors.New("subnet: no such subnet on the P-chain")
	// ErrNotPermissioned: the subnet's validators are not the owner's to
	// change (converted to an L1, or made permissionless).
	ErrNotPermissioned = errors.New("subnet: validators are not managed by the subnet owner")
	// ErrNotOwner: the key is not among the subnet owner's addresses.
	ErrNotOwner = errors.New("subnet: the key does not control the subnet")
	// ErrThreshold: the owner needs more signatures than one key gives.
	ErrThreshold = errors.New("subnet: the subnet owner needs more than one signature")
	// ErrOwnerLocked: the owner cannot sign before its locktime.
	ErrOwnerLocked = errors.New("subnet: the subnet owner is time-locked")
	// ErrNotValidator: the node is not a current validator of the subnet.
	ErrNotValidator = errors.New("subnet: not a current validator of the subnet")
	// ErrLastValidator: removing the only validator would halt the chain
	// for good (nobody could propose or vote).
	ErrLastValidator = errors.New("subnet: refusing to remove the subnet's last validator")
	// ErrAlreadyValidator: the node validates the subnet already.
	ErrAlreadyValidator = errors.New("subnet: already a validator of the subnet")
	// ErrNotPrimaryValidator: only validators of the primary network can
	// validate a subnet.
	ErrNotPrimaryValidator = errors.New("subnet: not a current validator of the primary network")
	// ErrOffline: the node to add is not connected. Added, it would be an
	// expected proposer that never proposes: the block gaps its removal
	// ended would come back.
	ErrOffline = errors.New("subnet: the node is not connected")
	// ErrEndTime: the end time is not within the node's primary-network
	// validation, or not in the future.
	ErrEndTime = errors.New("subnet: end time out of bounds")
	// ErrWeight: no weight given, and the current validators do not agree
	// on one to default to.
	ErrWeight = errors.New("subnet: weight required")
	// ErrInsufficientFunds: the key's P-chain balance cannot pay the fee.
	ErrInsufficientFunds = errors.New("subnet: the key's P-chain balance cannot pay the fee")
	// ErrRejected: the P-chain refused or dropped the transaction.
	ErrRejected = errors.New("subnet: the P-chain did not commit the transaction")
)

// FormatAddress renders a P-chain address as wallets show it
// (P-<hrp>1...).
func (f *Facts) FormatAddress(addr ids.ShortID) string {
	s, err := address.Format("P", constants.GetHRP(f.NetworkID), addr[:])
	if err != nil {
		return addr.String()
	}
	return s
}

// Authorize checks that a single key with address addr can change the
// subnet's validators now.
func (f *Facts) Authorize(addr ids.ShortID) error {
	switch {
	case f.ConversionID != ids.Empty:
		return fmt.Errorf("%w: subnet %s was converted to an L1 (conversion %s); its validator manager adds and removes validators",
			ErrNotPermissioned, f.SubnetID, f.ConversionID)
	case f.TransformationTxID != ids.Empty:
		return fmt.Errorf("%w: subnet %s is permissionless (transformed by %s)", ErrNotPermissioned, f.SubnetID, f.TransformationTxID)
	case !slices.Contains(f.Owner.Addresses, addr):
		owners := make([]string, len(f.Owner.Addresses))
		for i, a := range f.Owner.Addresses {
			owners[i] = f.FormatAddress(a)
		}
		return fmt.Errorf("%w: the key's address %s is not among the owner's [%s] of subnet %s",
			ErrNotOwner, f.FormatAddress(addr), strings.Join(owners, ", "), f.SubnetID)
	case f.Owner.Threshold > 1:
		return fmt.Errorf("%w: subnet %s needs %d of its %d owner keys to sign",
			ErrThreshold, f.SubnetID, f.Owner.Threshold, len(f.Owner.Addresses))
	case f.Owner.Locktime > uint64(f.Time.Unix()):
		return fmt.Errorf("%w: subnet %s's owner is locked until %s", ErrOwnerLocked, f.SubnetID,
			time.Unix(int64(f.Owner.Locktime), 0).UTC().Format(time.RFC3339))
	}
	return nil
}

// CheckRemove returns the validator nodeID if it can be removed: it is a
// current validator, and not the last one.
func (f *Facts) CheckRemove(nodeID ids.NodeID) (Validator, error) {
	v, ok := f.Validator(nodeID)
	if !ok {
		return Validator{}, fmt.Errorf("%w: %s is not among the %d validators of subnet %s at P-chain height %d",
			ErrNotValidator, nodeID, len(f.Validators), f.SubnetID, f.Height)
	}
	if len(f.Validators) == 1 {
		return Validator{}, fmt.Errorf("%w: %s is the only validator of subnet %s", ErrLastValidator, nodeID, f.SubnetID)
	}
	return v, nil
}

// Addition is what an operator asks for when adding a validator.
type Addition struct {
	NodeID ids.NodeID
	// Weight is the validator's sampling weight; 0 takes the weight every
	// current validator has (ErrWeight if they differ).
	Weight uint64
	// End is when the P-chain removes the validator again; zero takes the
	// end of the node's primary-network validation (the latest allowed).
	End time.Time
	// AllowOffline adds the node even if it is not connected.
	AllowOffline bool
}

// CheckAdd turns a request into the subnet validator to add, given the
// node's primary-network validation p (nil: it has none). Since Durango the
// P-chain starts a subnet validator when it commits the transaction and
// ignores the start time, which is set to the P-chain's time here.
func (f *Facts) CheckAdd(a Addition, p *Primary) (*txs.SubnetValidator, error) {
	if v, ok := f.Validator(a.NodeID); ok {
		return nil, fmt.Errorf("%w: %s validates subnet %s with weight %d until %s",
			ErrAlreadyValidator, a.NodeID, f.SubnetID, v.Weight, v.End.UTC().Format(time.RFC3339))
	}
	if p == nil {
		return nil, fmt.Errorf("%w: %s (a subnet validator must first validate the primary network)", ErrNotPrimaryValidator, a.NodeID)
	}
	if p.Connected != nil && !*p.Connected && !a.AllowOffline {
		return nil, fmt.Errorf("%w: %s is not connected to the node asked; added offline, its proposer slots would stall every block it is drawn for", ErrOffline, a.NodeID)
	}
	end := a.End
	if end.IsZero() {
		end = p.End
	}
	switch {
	case end.After(p.End):
		return nil, fmt.Errorf("%w: %s is after %s's primary-network validation ends (%s)",
			ErrEndTime, end.UTC().Format(time.RFC3339), a.NodeID, p.End.UTC().Format(time.RFC3339))
	case !end.After(f.Time):
		return nil, fmt.Errorf("%w: %s is not after the P-chain's time %s",
			ErrEndTime, end.UTC().Format(time.RFC3339), f.Time.UTC().Format(time.RFC3339))
	}
	weight := a.Weight
	if weight == 0 {
		var err error
		if weight, err = f.commonWeight(); err != nil {
			return nil, err
		}
	}
	return &txs.SubnetValidator{
		Validator: txs.Validator{
			NodeID: a.NodeID,
			Start:  uint64(f.Time.Unix()),
			End:    uint64(end.Unix()),
			Wght:   weight,
		},
		Subnet: f.SubnetID,
	}, nil
}

// commonWeight is the weight all current validators share.
func (f *Facts) commonWeight() (uint64, error) {
	if len(f.Validators) == 0 {
		return 0, fmt.Errorf("%w: subnet %s has no validator to take the weight from", ErrWeight, f.SubnetID)
	}
	w := f.Validators[0].Weight
	for _, v := range f.Validators[1:] {
		if v.Weight != w {
			return 0, fmt.Errorf("%w: the validators of subnet %s have different weights (%d, %d, ...)", ErrWeight, f.SubnetID, w, v.Weight)
		}
	}
	return w, nil
}
