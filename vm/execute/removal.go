package execute

import (
	"math/bits"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/state"
)

// Removal is the genesis rule by which the chain decides, on its own, to
// remove a dead validator from the P-chain set (Rules.Removals): S-Chain as
// an L1's validator manager. A decision is only a record in state; the
// validators then sign, each for decisions its own accepted state holds,
// the Warp message that sets the validator's weight to zero on the
// P-chain.
type Removal struct {
	// Rounds (M) is how many consecutive rounds that had a block a
	// validator of the P-chain set must have been out of the membership
	// before the chain decides its removal. Rounds without a block do not
	// count, as for the membership itself. 0 turns removals off.
	Rounds uint64
	// MinValidators is the fewest validators the set may keep: no
	// decision leaves fewer (those already decided count as gone).
	MinValidators uint64
}

// WarpQuorum is the share of the set's weight, in percent, whose
// signatures the P-chain accepts on an L1's Warp message (avalanchego's
// default quorum, 67%). A removal the live members cannot sign is never
// decided: it could not take effect, and their signing it would not be
// the P-chain's rule but ours.
const WarpQuorum = 67

// removals updates, at the opening of a new round, each validator's count
// of rounds out of the membership (outs: the liveness records that change)
// and decides or cancels removals. It is pure: the same parent state, set
// and members give the same records on every node.
//
// A validator that is a member again has its count reset and any decision
// about it deleted: it came back before the P-chain removed it. A
// validator out for Rounds rounds is decided for removal, in order of
// NodeID, as long as the set keeps MinValidators validators that are not
// decided and the members hold WarpQuorum of the set's weight. No decision
// is taken in a fallback round (nobody's heartbeat landed: that says
// nothing about who is alive).
func (rm Removal) removals(r state.Reader, v *ValidatorSet, m *state.Membership, recs map[ids.NodeID]state.Liveness) ([]state.LivenessUpdate, []state.RemovalUpdate, error) {
	if rm.Rounds == 0 {
		return nil, nil, nil
	}
	member := make(map[ids.NodeID]bool, len(m.Members))
	var memberWeight uint64
	for _, mb := range m.Members {
		member[mb.NodeID] = true
		memberWeight += mb.Weight
	}
	all := v.Members()
	var (
		outs     []state.LivenessUpdate
		updates  []state.RemovalUpdate
		decided  uint64
		total    uint64
		eligible []pinning.Member
	)
	for _, mb := range all {
		total += mb.Weight
		rec := recs[mb.NodeID]
		_, pending, err := r.Removal(mb.NodeID)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case member[mb.NodeID]:
			if rec.Out != 0 {
				rec.Out = 0
				outs = append(outs, state.LivenessUpdate{NodeID: mb.NodeID, Record: rec})
			}
			if pending {
				updates = append(updates, state.RemovalUpdate{NodeID: mb.NodeID, Delete: true})
			}
			continue
		case m.Fallback:
			continue
		}
		rec.Out++
		outs = append(outs, state.LivenessUpdate{NodeID: mb.NodeID, Record: rec})
		if pending {
			decided++
		} else if rec.Out >= rm.Rounds {
			eligible = append(eligible, mb)
		}
	}
	if !signable(memberWeight, total) {
		return outs, updates, nil
	}
	for _, mb := range eligible {
		if uint64(len(all))-decided-1 < rm.MinValidators {
			break
		}
		decided++
		updates = append(updates, state.RemovalUpdate{NodeID: mb.NodeID, Removal: state.Removal{Round: m.Round, PChainHeight: m.PChainHeight, Weight: mb.Weight}})
	}
	return outs, updates, nil
}

// signable reports whether signers holding part of total reach WarpQuorum:
// part*100 >= total*67, without overflow.
func signable(part, total uint64) bool {
	ph, pl := bits.Mul64(part, 100)
	th, tl := bits.Mul64(total, WarpQuorum)
	return ph > th || (ph == th && pl >= tl)
}
