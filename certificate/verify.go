package certificate

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/ava-labs/avalanchego/utils/crypto/bls"
	"github.com/ava-labs/avalanchego/utils/set"
	"github.com/ava-labs/avalanchego/vms/platformvm/warp"

	"github.com/s-chain/schain/errcode"
)

// Why Verify refuses a certificate. Each names one check, so a client can
// tell a certificate for another chain from a forged one.
var (
	ErrWrongNetwork      = errcode.New(errcode.Rejected, "wrong_network", "certificate: for another network")
	ErrWrongChain        = errcode.New(errcode.Rejected, "wrong_chain", "certificate: for another chain")
	ErrWrongSet          = errcode.New(errcode.Rejected, "wrong_validator_set", "certificate: checked against the validator set of another P-chain height")
	ErrEmptySet          = errcode.New(errcode.Rejected, "empty_validator_set", "certificate: the validator set has no stake")
	ErrBadSigners        = errcode.New(errcode.Rejected, "bad_signers", "certificate: the signer bitset is not canonical or names validators the set does not have")
	ErrInsufficientStake = errcode.New(errcode.Rejected, "insufficient_stake", "certificate: signers hold at most 2/3 of the stake")
	ErrBadSignature      = errcode.New(errcode.Rejected, "bad_signature", "certificate: the aggregate signature does not verify")
	ErrBadValidatorSet   = errcode.New(errcode.InvalidParams, "bad_validator_set", "certificate: malformed validator set")
	// ErrBeforeChain: the certificate names a P-chain height below the one
	// the chain was created at. Subnet validators join one transaction at
	// a time, so early heights may have one validator holding all of the
	// subnet's stake, who could certify an invented chain alone.
	ErrBeforeChain = errcode.New(errcode.Rejected, "before_chain", "certificate: at a P-chain height before the chain was created")
	// ErrNoChainCreation: the validator set does not say at which P-chain
	// height the chain was created, so no certificate can be bounded.
	ErrNoChainCreation = errcode.New(errcode.InvalidParams, "no_chain_creation", "certificate: the validator set names no chain creation height (chainCreatedAt)")
)

// Validator is one P-chain validator of a subnet at a height. PublicKey is
// its compressed BLS key in 0x-prefixed hex, empty for a validator without
// one (it counts in the total stake but can never sign).
type Validator struct {
	NodeID    ids.NodeID `json:"nodeID"`
	PublicKey string     `json:"publicKey,omitempty"`
	Weight    uint64     `json:"weight"`
}

// ValidatorSet is a subnet's P-chain validator set at a height: what a
// certificate is checked against. Take it from the P-chain (any node's
// platform.getValidatorsAt) or from a file (ReadValidatorSet).
type ValidatorSet struct {
	// NetworkID is the network the P-chain belongs to (0 when unknown).
	NetworkID    uint32      `json:"networkID,omitempty"`
	SubnetID     ids.ID      `json:"subnetID"`
	PChainHeight uint64      `json:"pChainHeight"`
	Validators   []Validator `json:"validators"`
	// ChainCreatedAt is the P-chain height of the block holding the
	// chain's CreateChainTx, learnt from the P-chain (never from the
	// S-Chain node being checked): no genuine certificate is below it.
	// Required by Verify; a chain is never created at height 0.
	ChainCreatedAt uint64 `json:"chainCreatedAt,omitempty"`
}

// NewValidatorSet is the set avalanchego's validator state returns, in
// NodeID order.
func NewValidatorSet(subnetID ids.ID, pChainHeight uint64, vals map[ids.NodeID]*validators.GetValidatorOutput) ValidatorSet {
	s := ValidatorSet{SubnetID: subnetID, PChainHeight: pChainHeight}
	for id, v := range vals {
		out := Validator{NodeID: id, Weight: v.Weight}
		if v.PublicKey != nil {
			out.PublicKey = "0x" + hex.EncodeToString(bls.PublicKeyToCompressedBytes(v.PublicKey))
		}
		s.Validators = append(s.Validators, out)
	}
	slices.SortFunc(s.Validators, func(a, b Validator) int { return a.NodeID.Compare(b.NodeID) })
	return s
}

// Canonical is the set in warp's canonical order: validators with a key,
// sorted by key, those sharing a key merged; the total weight counts
// everyone.
func (s ValidatorSet) Canonical() (validators.WarpSet, error) {
	m := make(map[ids.NodeID]*validators.GetValidatorOutput, len(s.Validators))
	for _, v := range s.Validators {
		if _, dup := m[v.NodeID]; dup {
			return validators.WarpSet{}, fmt.Errorf("%w: %s listed twice", ErrBadValidatorSet, v.NodeID)
		}
		out := &validators.GetValidatorOutput{NodeID: v.NodeID, Weight: v.Weight}
		if v.PublicKey != "" {
			b, err := hex.DecodeString(strings.TrimPrefix(v.PublicKey, "0x"))
			if err != nil {
				return validators.WarpSet{}, fmt.Errorf("%w: %s: public key: %w", ErrBadValidatorSet, v.NodeID, err)
			}
			if out.PublicKey, err = bls.PublicKeyFromCompressedBytes(b); err != nil {
				return validators.WarpSet{}, fmt.Errorf("%w: %s: public key: %w", ErrBadValidatorSet, v.NodeID, err)
			}
		}
		m[v.NodeID] = out
	}
	set, err := validators.FlattenValidatorSet(m)
	if err != nil {
		return validators.WarpSet{}, fmt.Errorf("%w: %w", ErrBadValidatorSet, err)
	}
	return set, nil
}

// ReadValidatorSet reads a set saved as JSON (ValidatorSet's form; `schain
// verify --save-validators` writes one).
func ReadValidatorSet(path string) (ValidatorSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ValidatorSet{}, err
	}
	var s ValidatorSet
	if err := json.Unmarshal(b, &s); err != nil {
		return ValidatorSet{}, fmt.Errorf("%w: %s: %w", ErrBadValidatorSet, path, err)
	}
	return s, nil
}

// Result is what a verified certificate proves: the stake that signed and
// the total.
type Result struct {
	SignedWeight uint64 `json:"signedWeight"`
	TotalWeight  uint64 `json:"totalWeight"`
	Signers      int    `json:"signers"`
}

// Verify checks c offline: it is for networkID and chainID, at a P-chain
// height no lower than the chain's creation, the set is the one at c's
// P-chain height, the signers are validators of that set holding more than
// 2/3 of its stake, and their aggregate BLS signature covers c's statement.
func Verify(c *Certificate, networkID uint32, chainID ids.ID, vs ValidatorSet) (Result, error) {
	switch {
	case c.NetworkID != networkID:
		return Result{}, fmt.Errorf("%w: certificate network %d, expected %d", ErrWrongNetwork, c.NetworkID, networkID)
	case c.ChainID != chainID:
		return Result{}, fmt.Errorf("%w: certificate chain %s, expected %s", ErrWrongChain, c.ChainID, chainID)
	case vs.ChainCreatedAt == 0:
		return Result{}, ErrNoChainCreation
	case c.PChainHeight < vs.ChainCreatedAt:
		return Result{}, fmt.Errorf("%w: certificate at P-chain height %d, chain created at %d", ErrBeforeChain, c.PChainHeight, vs.ChainCreatedAt)
	case vs.PChainHeight != c.PChainHeight:
		return Result{}, fmt.Errorf("%w: set at %d, certificate at %d", ErrWrongSet, vs.PChainHeight, c.PChainHeight)
	}
	canonical, err := vs.Canonical()
	if err != nil {
		return Result{}, err
	}
	return VerifyCanonical(c, canonical)
}

// VerifyCanonical is Verify's signature and stake check against a set
// already in canonical order (a node's own view).
func VerifyCanonical(c *Certificate, vs validators.WarpSet) (Result, error) {
	if vs.TotalWeight == 0 {
		return Result{}, ErrEmptySet
	}
	indices := set.BitsFromBytes(c.Signers)
	if len(indices.Bytes()) != len(c.Signers) {
		return Result{}, fmt.Errorf("%w: leading zero bytes", ErrBadSigners)
	}
	signers, err := warp.FilterValidators(indices, vs.Validators)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrBadSigners, err)
	}
	var signed uint64
	for _, v := range signers {
		signed += v.Weight // no overflow: a subset of a set whose total fits
	}
	res := Result{SignedWeight: signed, TotalWeight: vs.TotalWeight, Signers: len(signers)}
	if !Supermajority(signed, vs.TotalWeight) {
		return res, fmt.Errorf("%w: %d of %d", ErrInsufficientStake, signed, vs.TotalWeight)
	}
	sig, err := bls.SignatureFromBytes(c.Signature[:])
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	key, err := warp.AggregatePublicKeys(signers)
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	msg, err := c.Message()
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !bls.Verify(key, sig, msg.Bytes()) {
		return res, ErrBadSignature
	}
	return res, nil
}
