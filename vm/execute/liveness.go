package execute

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/errcode"

	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/state"
)

var (
	// ErrRoundBackward means a block's liveness round is below the one the
	// state already froze a membership for (timestamps went backwards).
	ErrRoundBackward = errcode.New(errcode.Rejected, "round_backward", "execute: liveness round below the recorded membership's")
	// ErrWrongRound: a heartbeat counts only in a block of its own liveness
	// round.
	ErrWrongRound = errcode.New(errcode.Rejected, "wrong_round", "execute: heartbeat round differs from the block's liveness round")
	// ErrDuplicateHeartbeat: one heartbeat per validator per liveness round.
	ErrDuplicateHeartbeat = errcode.New(errcode.Rejected, "duplicate_heartbeat", "execute: validator already sent a heartbeat in this liveness round")
)

// Liveness is the genesis rule that filters the P-chain set down to the
// validators that recently proved they are alive.
type Liveness struct {
	// RoundMs is the length of a liveness round: block timestamp t (unix
	// milliseconds) is in round t / RoundMs.
	RoundMs uint64
	// K is how many rounds a heartbeat (or a new validator's grace) lasts:
	// validator v is a member in round e if its last heartbeat, or the
	// round it was first seen in, is at least e-K, where rounds without a
	// block do not count (see OpenMembership).
	K uint64
	// TxLifetime is how many rounds after the one it was signed in
	// (txs.Header.Round) a transaction other than a heartbeat stays valid.
	// The replay index only needs the transactions of these rounds.
	TxLifetime uint64
	// Removal decides the removal of validators long out of the
	// membership (Rules.Removals).
	Removal Removal
}

// Round is the liveness round of a block timestamp.
func (l Liveness) Round(timestampMs uint64) uint64 { return timestampMs / l.RoundMs }

// liveTest returns whether a validator with a given record is a member of
// the membership opened in round, after the one recorded in prev.
//
// A heartbeat (or a first appearance) keeps a validator a member for the
// round it landed in and the next K rounds that had a block. With
// rules.LivenessGaps the record keeps those rounds (BlockRounds), so every
// round without a block is discounted. Before it, only the gap between
// prev's round and this one was: rounds without a block further back still
// counted, and with K >= 2 a grace could end after fewer than K+1 rounds
// with blocks. A record written before the change carries no BlockRounds,
// so the first openings after it keep the old measure until the record has
// them.
func (l Liveness) liveTest(prev *state.Membership, round uint64, rules Rules) func(state.Liveness) bool {
	since := func(from uint64) func(state.Liveness) bool {
		return func(rec state.Liveness) bool {
			return rec.FirstSeen >= from || (rec.HasHeartbeat && rec.Heartbeat >= from)
		}
	}
	if rules.LivenessGaps && (prev == nil || len(prev.BlockRounds) > 0) {
		before := l.roundsBefore(prev, round)
		if uint64(len(before)) < l.K {
			// The chain has had fewer than K rounds with a block before
			// this one: nobody's grace can have run out.
			return since(0)
		}
		return since(before[l.K-1])
	}
	ref := round
	if prev != nil && prev.Round < round {
		ref = prev.Round + 1
	}
	return func(rec state.Liveness) bool {
		recent := func(at uint64) bool { return at >= ref || ref-at <= l.K }
		return recent(rec.FirstSeen) || (rec.HasHeartbeat && recent(rec.Heartbeat))
	}
}

// roundsBefore is the rounds with a block before round that prev records,
// newest first.
func (Liveness) roundsBefore(prev *state.Membership, round uint64) []uint64 {
	if prev == nil {
		return nil
	}
	i := 0
	for i < len(prev.BlockRounds) && prev.BlockRounds[i] >= round {
		i++
	}
	return prev.BlockRounds[i:]
}

// blockRounds is what the membership opened in round records: round, then
// the rounds with a block before it, newest first, K+1 in all. K+1 and not
// K, because a membership opened for a new P-chain height within a round
// that already had one needs the K rounds before that round.
func (l Liveness) blockRounds(prev *state.Membership, round uint64) []uint64 {
	before := l.roundsBefore(prev, round)
	out := make([]uint64, 0, l.K+1)
	out = append(out, round)
	for _, r := range before {
		if uint64(len(out)) == l.K+1 {
			break
		}
		out = append(out, r)
	}
	return out
}

// Opening is what OpenMembership decided for one block.
type Opening struct {
	// Membership is the one the block executes under.
	Membership *state.Membership
	// Opened: the parent's record is for another (P-chain height, round),
	// so the block freezes Membership (state.Layer.Freeze) together with
	// Seen, the first-seen records of validators new to the chain.
	Opened bool
	Seen   []state.LivenessUpdate
	// Changed: the block puts other members (or another P-chain height) in
	// force, so work pinned to the parent's membership is dead.
	Changed bool
	// Removals are the removal decisions the block takes or cancels
	// (Rules.Removals, at the opening of a new round: see Open); the
	// liveness records whose count of rounds out changes join Seen.
	Removals []state.RemovalUpdate
	// newRound: the parent's record is of an earlier round (not only of
	// another P-chain height), so rounds out are counted (Open).
	newRound bool
	// records are the liveness records the membership was computed from.
	records map[ids.NodeID]state.Liveness
}

// OpenMembership returns the membership a block of liveness round round,
// whose P-chain context selects the set v, executes under, given the state
// r its parent left. If the parent's record is not for (v's height, round),
// the block opens a new membership: the validators of v that are live, or,
// if none is, the previous members still in v (see fallback; never nobody).
//
// Rounds in which no block was built do not count: liveness is measured
// from the parent's round, as if the round after it were this one. A
// heartbeat lands only in a block of its own round, so a round without a
// block carries nobody's, and counting it would make every live validator
// look as dead as a dead one. Rounds as short as the proposer VM's 5 s
// slots do pass without a block while a dead validator is the expected
// proposer; a dead validator therefore leaves after K+1 rounds that had
// blocks, not K+1 rounds of the clock.
//
// It is pure: the same parent state, set and round give the same result on
// every node, which is why a membership never depends on a node's own view
// of who is up.
func OpenMembership(r state.Reader, v *ValidatorSet, round uint64, l Liveness, rules Rules) (Opening, error) {
	prev, err := r.Membership()
	switch {
	case errors.Is(err, state.ErrNotFound):
		prev = nil
	case err != nil:
		return Opening{}, err
	case prev.PChainHeight == v.Height() && prev.Round == round:
		return Opening{Membership: prev}, nil
	case round < prev.Round:
		return Opening{}, fmt.Errorf("%w: %d < %d", ErrRoundBackward, round, prev.Round)
	}
	live := l.liveTest(prev, round, rules)
	var (
		members []pinning.Member
		seen    []state.LivenessUpdate
	)
	all := v.Members()
	recs := make(map[ids.NodeID]state.Liveness, len(all))
	for _, mb := range all {
		rec, ok, err := r.Liveness(mb.NodeID)
		if err != nil {
			return Opening{}, err
		}
		if !ok {
			rec = state.Liveness{FirstSeen: round}
			seen = append(seen, state.LivenessUpdate{NodeID: mb.NodeID, Record: rec})
		}
		recs[mb.NodeID] = rec
		if live(rec) {
			members = append(members, mb)
		}
	}
	m := &state.Membership{PChainHeight: v.Height(), Round: round, Members: members}
	if rules.LivenessGaps {
		m.BlockRounds = l.blockRounds(prev, round)
	}
	if len(members) == 0 {
		m.Fallback, m.Members = true, fallback(prev, all)
	}
	changed := prev == nil || prev.PChainHeight != m.PChainHeight
	if prev != nil {
		m.Generation = prev.Generation
		if !slices.Equal(prev.Members, m.Members) {
			m.Generation++
			changed = true
		}
	}
	return Opening{Membership: m, Opened: true, Seen: seen, Changed: changed,
		newRound: prev == nil || prev.Round != round, records: recs}, nil
}

// fallback is the membership of a round in which no validator is live: no
// heartbeat landed in the last K rounds that had blocks (their blocks were
// built before any heartbeat reached the proposer, or by a proposer that
// left them out), not when every validator died. The
// previous members that are still in the P-chain set stay members, so such a
// round changes nothing (no generation, no re-pinning) and a dead validator
// does not get its ranges back; without a previous membership, or when none
// of its members is left, it is the whole set (never nobody).
func fallback(prev *state.Membership, all []pinning.Member) []pinning.Member {
	if prev == nil {
		return all
	}
	kept := make([]pinning.Member, 0, len(prev.Members))
	for _, mb := range all {
		for _, p := range prev.Members {
			if p.NodeID == mb.NodeID {
				kept = append(kept, mb)
				break
			}
		}
	}
	if len(kept) == 0 {
		return all
	}
	return kept
}
