// Package eviction decides when a validator has been gone long enough to
// be removed from the subnet, and removes it.
//
// S-Chain moves a dead validator's ranges by itself, K+1 liveness rounds
// after its last heartbeat (docs/concepts/liveness.md). Block production cannot be
// fixed from inside the chain: avalanchego's proposer VM keeps giving the
// dead validator 5 s slots until it is removed from the subnet on the
// P-chain, which takes the subnet owner's key. The Policy here names the
// validator to remove (out of the membership for M rounds, with guards),
// and a Watcher applies it with a subnet.Admin, one removal at a time.
//
// The watcher is an operator's process (`schain validators watch`), not part
// of the VM: a validator must never hold the key that changes the set it is
// part of, and removing a validator is a decision about the network the
// operator opts into. It reads the liveness records from S-Chain's accepted
// state (schain.getMembership). A node that stopped following the chain
// answers from old records, in which a validator that came back since is
// still out: so the watcher reads the newest view of nodes holding more
// than 2/3 of the stake (the client's fresh reads), and never acts on a
// view older than one it already saw.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package eviction

import (
	"slices"
	"time"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/operator/subnet"
)

// Standing is one validator as S-Chain's liveness records and the P-chain
// see it.
type Standing struct {
	NodeID ids.NodeID `json:"nodeID"`
	Weight uint64     `json:"weight"`
	// OnPChain: a current validator of the subnet on the P-chain now.
	// InMembershipView: in the P-chain set of S-Chain's current membership view. The two
	// differ for up to one ACP-181 epoch after the set changes (30 s
	// locally, 5 minutes on mainnet): S-Chain follows the P-chain height
	// its blocks are pinned to.
	OnPChain         bool `json:"onPChain"`
	InMembershipView bool `json:"inMembershipView"`
	// Member: ranges are pinned to it in the current liveness round.
	Member bool `json:"member"`
	// FirstSeen and LastHeartbeat are its liveness records (liveness
	// rounds; absent: none).
	FirstSeen     *uint64 `json:"firstSeen,omitempty"`
	LastHeartbeat *uint64 `json:"lastHeartbeat,omitempty"`
	// LastHeartbeatAt is the start of the liveness round its last
	// heartbeat landed in: it was alive at some time in the membership view after.
	LastHeartbeatAt *time.Time `json:"lastHeartbeatAt,omitempty"`
	// OutRounds is the number of liveness rounds, up to the current one,
	// whose membership left it out; 0 for a member, and for a validator
	// still within the K+1 rounds of grace it gets when it (re)joins the
	// subnet. OutSince is when the first of them began.
	OutRounds uint64     `json:"outRounds"`
	OutSince  *time.Time `json:"outSince,omitempty"`
}

// Out is how long the validator has been out of the membership, counted in
// whole liveness rounds.
func (s Standing) Out(round time.Duration) time.Duration {
	return time.Duration(s.OutRounds) * round
}

// Assess lines up S-Chain's membership view e with the P-chain's facts f (nil: not
// known), one Standing per validator of either, sorted by node ID.
func Assess(e *api.MembershipReply, f *subnet.Facts) []Standing {
	byID := map[ids.NodeID]*Standing{}
	get := func(id ids.NodeID) *Standing {
		if s, ok := byID[id]; ok {
			return s
		}
		s := &Standing{NodeID: id}
		byID[id] = s
		return s
	}
	for _, v := range e.Validators {
		s := get(ids.NodeID(v.NodeID))
		s.Weight, s.InMembershipView, s.Member = v.Weight, true, v.Member
		s.FirstSeen, s.LastHeartbeat = v.FirstSeen, v.LastHeartbeat
		if v.LastHeartbeat != nil {
			at := roundStart(e, *v.LastHeartbeat)
			s.LastHeartbeatAt = &at
		}
	}
	var starts map[ids.NodeID]time.Time
	if f != nil {
		starts = make(map[ids.NodeID]time.Time, len(f.Validators))
		for _, v := range f.Validators {
			s := get(ids.NodeID(v.NodeID))
			s.OnPChain = true
			starts[v.NodeID] = v.Start
			if !s.InMembershipView {
				s.Weight = v.Weight
			}
		}
	}
	out := make([]Standing, 0, len(byID))
	for _, s := range byID {
		s.OutRounds = outRounds(e, *s, starts[s.NodeID])
		if s.OutRounds > 0 {
			since := roundStart(e, e.Round-s.OutRounds+1)
			s.OutSince = &since
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Standing) int { return a.NodeID.Compare(b.NodeID) })
	return out
}

// outRounds counts the liveness rounds up to e.Round whose membership left
// s out. A validator is a member in round r if its last heartbeat or its
// first-seen round is at least r-K (execute.OpenMembership); the policy
// also counts its latest start on the P-chain (start, zero if unknown) as
// a sign of life, so that a validator an operator re-adds is given the same
// K+1 rounds to heartbeat as a new one, instead of being out at once by
// records from before its removal.
func outRounds(e *api.MembershipReply, s Standing, start time.Time) uint64 {
	if !s.InMembershipView || s.Member || e.RoundDurationMs == 0 {
		return 0
	}
	var last uint64
	known := false
	for _, r := range []*uint64{s.FirstSeen, s.LastHeartbeat} {
		if r != nil {
			last, known = max(last, *r), true
		}
	}
	if !start.IsZero() && start.UnixMilli() > 0 {
		last, known = max(last, uint64(start.UnixMilli())/e.RoundDurationMs), true
	}
	if !known || e.Round <= last+e.LivenessRounds {
		return 0
	}
	return e.Round - last - e.LivenessRounds
}

// roundStart is when liveness round r began.
func roundStart(e *api.MembershipReply, r uint64) time.Time {
	return time.UnixMilli(int64(r * e.RoundDurationMs))
}
