package eviction

import (
	"errors"
	"fmt"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
)

// ErrPolicy: the policy's parameters are out of range.
var ErrPolicy = errors.New("eviction: invalid policy")

// DefaultMinValidators is the smallest validator set the policy leaves: one
// validator alone has nobody to agree with, and a set that small is an
// operator's decision to make by hand.
const DefaultMinValidators = 2

// Policy removes a validator once it has been out of S-Chain's membership
// for After liveness rounds (M), as long as MinValidators remain.
//
// After trades the time the chain keeps paying for the dead validator's
// proposer slots (5, 10, 15 s gaps at the heights it was drawn for) against
// removing a validator that is only slow or briefly partitioned: a removed
// validator must be added back by the operator (`schain validators add`).
// A validator is out once K+1 rounds passed without its heartbeat, so
// After=1 removes it about K+1 rounds after it died; each further round
// waits one more.
type Policy struct {
	After         uint64
	MinValidators int
}

// Verify checks the parameters.
func (p Policy) Verify() error {
	switch {
	case p.After == 0:
		return fmt.Errorf("%w: remove-after must be at least 1 liveness round", ErrPolicy)
	case p.MinValidators < 1:
		return fmt.Errorf("%w: min-validators must be at least 1, got %d", ErrPolicy, p.MinValidators)
	}
	return nil
}

// Decision is the policy's verdict on one pass: the validator to remove
// now (NodeID empty: nobody) and why.
type Decision struct {
	NodeID    ids.NodeID `json:"nodeID,omitzero"`
	OutRounds uint64     `json:"outRounds,omitempty"`
	Reason    string     `json:"reason"`
}

// Remove reports whether the decision removes a validator.
func (d Decision) Remove() bool { return d.NodeID != ids.EmptyNodeID }

// Decide picks at most one validator to remove: among those that are on
// the P-chain, in S-Chain's membership view and out of its membership for at least
// After rounds, the one out longest (ties: the smallest node ID). It
// removes nobody while S-Chain's membership is a fallback (nobody's
// heartbeat is recent: the chain itself, not a validator, is stuck) or
// when fewer than MinValidators would remain on the P-chain.
func (p Policy) Decide(e *api.MembershipReply, ss []Standing) Decision {
	if e.Fallback {
		return Decision{Reason: "S-Chain's membership is a fallback (no validator's heartbeat is recent): removing nobody"}
	}
	onPChain := 0
	var best *Standing
	for i := range ss {
		s := &ss[i]
		if s.OnPChain {
			onPChain++
		}
		if !s.OnPChain || !s.InMembershipView || s.Member || s.OutRounds < p.After {
			continue
		}
		if best == nil || s.OutRounds > best.OutRounds {
			best = s
		}
	}
	switch {
	case best == nil:
		return Decision{Reason: fmt.Sprintf("no validator has been out of the membership for %d liveness round(s)", p.After)}
	case onPChain-1 < p.MinValidators:
		return Decision{Reason: fmt.Sprintf("%s has been out for %d liveness round(s), but removing it would leave %d validator(s), fewer than the minimum %d",
			best.NodeID, best.OutRounds, onPChain-1, p.MinValidators)}
	}
	return Decision{
		NodeID: best.NodeID, OutRounds: best.OutRounds,
		Reason: fmt.Sprintf("%s has been out of the membership for %d liveness round(s) (policy: %d)", best.NodeID, best.OutRounds, p.After),
	}
}
