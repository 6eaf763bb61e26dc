package eviction

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/operator/subnet"
)

const roundMs = 30_000

func u(v uint64) *uint64 { return &v }

// roundTime is a time inside liveness round r.
func roundTime(r uint64) time.Time { return time.UnixMilli(int64(r*roundMs + 1)) }

var (
	live    = ids.GenerateTestNodeID() // member, heartbeat this round
	gone2   = ids.GenerateTestNodeID() // last heartbeat in 97: out for 98..100 minus K → 2
	gone9   = ids.GenerateTestNodeID() // never heartbeat, first seen in 90: out 9
	readded = ids.GenerateTestNodeID() // old records, re-added on the P-chain in round 99: grace
	removed = ids.GenerateTestNodeID() // in the membership view, no longer on the P-chain
	newcomr = ids.GenerateTestNodeID() // on the P-chain, not yet in the membership view
)

// membership is round 100 with K=1.
func membership() *api.MembershipReply {
	return &api.MembershipReply{
		Round: 100, RoundDurationMs: roundMs, LivenessRounds: 1,
		Validators: []api.ValidatorLiveness{
			{NodeID: api.NodeID(live), Weight: 10, Member: true, FirstSeen: u(1), LastHeartbeat: u(100)},
			{NodeID: api.NodeID(gone2), Weight: 10, FirstSeen: u(1), LastHeartbeat: u(97)},
			{NodeID: api.NodeID(gone9), Weight: 10, FirstSeen: u(90)},
			{NodeID: api.NodeID(readded), Weight: 10, FirstSeen: u(1), LastHeartbeat: u(50)},
			{NodeID: api.NodeID(removed), Weight: 10, FirstSeen: u(1), LastHeartbeat: u(10)},
		},
	}
}

func pchain(nodes ...ids.NodeID) *subnet.Facts {
	f := &subnet.Facts{}
	for _, n := range nodes {
		start := roundTime(1)
		if n == readded {
			start = roundTime(99)
		}
		f.Validators = append(f.Validators, subnet.Validator{NodeID: n, Weight: 10, Start: start})
	}
	return f
}

func standing(t *testing.T, ss []Standing, id ids.NodeID) Standing {
	t.Helper()
	for _, s := range ss {
		if s.NodeID == id {
			return s
		}
	}
	t.Fatalf("no standing for %s", id)
	return Standing{}
}

func TestAssess(t *testing.T) {
	require := require.New(t)
	ss := Assess(membership(), pchain(live, gone2, gone9, readded, newcomr))
	require.Len(ss, 6)
	for i := 1; i < len(ss); i++ {
		require.Negative(ss[i-1].NodeID.Compare(ss[i].NodeID))
	}

	s := standing(t, ss, live)
	require.True(s.Member && s.OnPChain && s.InMembershipView)
	require.Zero(s.OutRounds)
	require.Nil(s.OutSince)

	s = standing(t, ss, gone2)
	require.Equal(uint64(2), s.OutRounds, "member through 97+K=98, out in 99 and 100")
	require.Equal(time.UnixMilli(99*roundMs), *s.OutSince)
	require.Equal(time.UnixMilli(97*roundMs), *s.LastHeartbeatAt)
	require.Equal(time.Minute, s.Out(30*time.Second))

	s = standing(t, ss, gone9)
	require.Equal(uint64(9), s.OutRounds, "the first-seen grace counts like a heartbeat")
	require.Nil(s.LastHeartbeatAt)

	s = standing(t, ss, readded)
	require.False(s.Member)
	require.Zero(s.OutRounds, "re-added in 99: within K+1 rounds of grace")

	s = standing(t, ss, removed)
	require.True(s.InMembershipView)
	require.False(s.OnPChain)
	require.Equal(uint64(89), s.OutRounds)

	s = standing(t, ss, newcomr)
	require.True(s.OnPChain)
	require.False(s.InMembershipView)
	require.Equal(uint64(10), s.Weight, "weight from the P-chain")
	require.Zero(s.OutRounds)

	// Without P-chain facts, S-Chain's records alone count.
	ss = Assess(membership(), nil)
	require.Len(ss, 5)
	require.Equal(uint64(49), standing(t, ss, readded).OutRounds)
}

func TestDecide(t *testing.T) {
	all := []ids.NodeID{live, gone2, gone9, readded, newcomr}
	tests := []struct {
		name     string
		policy   Policy
		pchain   []ids.NodeID
		fallback bool
		want     ids.NodeID
		reason   string
	}{
		{name: "the one out longest", policy: Policy{After: 1, MinValidators: 2}, pchain: all, want: gone9},
		{name: "only those out long enough", policy: Policy{After: 3, MinValidators: 2}, pchain: all, want: gone9},
		{name: "nobody out long enough", policy: Policy{After: 10, MinValidators: 2}, pchain: all, reason: "for 10 liveness round(s)"},
		{name: "not on the P-chain any more", policy: Policy{After: 1, MinValidators: 2}, pchain: []ids.NodeID{live, gone2, readded}, want: gone2},
		{name: "the minimum stays", policy: Policy{After: 1, MinValidators: 2}, pchain: []ids.NodeID{live, gone2}, reason: "fewer than the minimum 2"},
		{name: "minimum 1", policy: Policy{After: 1, MinValidators: 1}, pchain: []ids.NodeID{live, gone2}, want: gone2},
		{name: "fallback", policy: Policy{After: 1, MinValidators: 1}, pchain: all, fallback: true, reason: "fallback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := membership()
			e.Fallback = tt.fallback
			d := tt.policy.Decide(e, Assess(e, pchain(tt.pchain...)))
			require.Equal(t, tt.want, d.NodeID, d.Reason)
			require.Equal(t, tt.want != ids.EmptyNodeID, d.Remove())
			require.Contains(t, d.Reason, tt.reason)
		})
	}
	require.ErrorIs(t, Policy{MinValidators: 2}.Verify(), ErrPolicy)
	require.ErrorIs(t, Policy{After: 1}.Verify(), ErrPolicy)
	require.NoError(t, Policy{After: 1, MinValidators: 1}.Verify())
}

// fakeChain is S-Chain's membership view and the P-chain, with removals that take
// effect on the P-chain at once and in S-Chain's membership view when lagging ends.
type fakeChain struct {
	epoch   *api.MembershipReply
	facts   *subnet.Facts
	lagging bool // S-Chain's membership view still lists removed validators
	issued  []ids.NodeID
	planErr error
}

func (c *fakeChain) GetMembership(context.Context) (*api.MembershipReply, error) {
	e := *c.epoch
	e.Validators = nil
	for _, v := range c.epoch.Validators {
		if c.lagging || c.onPChain(ids.NodeID(v.NodeID)) {
			e.Validators = append(e.Validators, v)
		}
	}
	return &e, nil
}

func (c *fakeChain) onPChain(id ids.NodeID) bool {
	_, ok := c.facts.Validator(id)
	return ok
}

func (c *fakeChain) Facts(context.Context) (*subnet.Facts, error) { return c.facts, nil }

func (c *fakeChain) PlanRemove(_ context.Context, id ids.NodeID) (*subnet.Plan, error) {
	if c.planErr != nil {
		return nil, c.planErr
	}
	return &subnet.Plan{Action: subnet.Remove, NodeID: id}, nil
}

func (c *fakeChain) Issue(_ context.Context, p *subnet.Plan) (*subnet.Receipt, error) {
	c.issued = append(c.issued, p.NodeID)
	var kept []subnet.Validator
	for _, v := range c.facts.Validators {
		if v.NodeID != p.NodeID {
			kept = append(kept, v)
		}
	}
	c.facts = &subnet.Facts{Validators: kept}
	return &subnet.Receipt{TxID: ids.GenerateTestID()}, nil
}

func TestWatcherRemovesOneAtATime(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	c := &fakeChain{epoch: membership(), facts: pchain(live, gone2, gone9, readded), lagging: true}
	w := &Watcher{Policy: Policy{After: 1, MinValidators: 2}, Memberships: c, Subnet: c}

	out, err := w.Pass(ctx)
	require.NoError(err)
	require.Equal(gone9, out.Decision.NodeID)
	require.NotNil(out.Receipt)
	require.Equal([]ids.NodeID{gone9}, c.issued)

	// S-Chain's membership view still lists gone9: gone2 waits.
	out, err = w.Pass(ctx)
	require.NoError(err)
	require.False(out.Decision.Remove())
	require.Contains(out.Decision.Reason, "waiting for S-Chain's membership view to drop "+gone9.String())
	require.Len(c.issued, 1)

	// Once the membership view follows the P-chain, the next one goes.
	c.lagging = false
	out, err = w.Pass(ctx)
	require.NoError(err)
	require.Equal(gone2, out.Decision.NodeID)
	require.Equal([]ids.NodeID{gone9, gone2}, c.issued)

	// Two validators left: the minimum.
	c.lagging = false
	out, err = w.Pass(ctx)
	require.NoError(err)
	require.False(out.Decision.Remove(), out.Decision.Reason)
	require.Len(c.issued, 2)
}

func TestWatcherDryRun(t *testing.T) {
	require := require.New(t)
	c := &fakeChain{epoch: membership(), facts: pchain(live, gone2, gone9, readded)}
	w := &Watcher{Policy: Policy{After: 1, MinValidators: 2}, Memberships: c, Subnet: c, DryRun: true}
	for range 2 {
		out, err := w.Pass(context.Background())
		require.NoError(err)
		require.Equal(gone9, out.Decision.NodeID)
		require.NotNil(out.Plan, "a dry run plans")
		require.Nil(out.Receipt)
	}
	require.Empty(c.issued, "a dry run issues nothing")
}

func TestWatcherRun(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A fatal error ends Run at once.
	c := &fakeChain{epoch: membership(), facts: pchain(live, gone2, gone9, readded), planErr: subnet.ErrNotOwner}
	w := &Watcher{Policy: Policy{After: 1, MinValidators: 2}, Memberships: c, Subnet: c}
	var reports int
	err := w.Run(ctx, time.Millisecond, func(_ *Outcome, err error) {
		reports++
		require.ErrorIs(err, subnet.ErrNotOwner)
	})
	require.ErrorIs(err, subnet.ErrNotOwner)
	require.Equal(1, reports)

	// A transient one is reported and retried until ctx ends.
	transient := errors.New("connection refused")
	c.planErr = transient
	runCtx, stop := context.WithCancel(ctx)
	reports = 0
	err = w.Run(runCtx, time.Millisecond, func(_ *Outcome, err error) {
		require.ErrorIs(err, transient)
		if reports++; reports == 3 {
			stop()
		}
	})
	require.NoError(err)
	require.Equal(3, reports)

	w.Policy = Policy{}
	require.ErrorIs(w.Run(ctx, time.Millisecond, nil), ErrPolicy, "checked before the first pass")
}

func TestFatal(t *testing.T) {
	require.True(t, Fatal(subnet.ErrThreshold))
	require.True(t, Fatal(errors.Join(errors.New("x"), ErrPolicy)))
	require.False(t, Fatal(subnet.ErrRejected))
	require.False(t, Fatal(subnet.ErrPChainAPI))
}

// views is a membership source that answers the views in turn, then the
// last one again.
type views struct {
	list []*api.MembershipReply
	n    int
}

func (v *views) GetMembership(context.Context) (*api.MembershipReply, error) {
	e := v.list[min(v.n, len(v.list)-1)]
	v.n++
	return e, nil
}

// TestWatcherRefusesAnOlderView (issue 30, finding 2): a node that stopped
// following the chain keeps answering: its view, older than one the
// watcher already saw, still counts a validator that came back as out
// (its heartbeats landed after that node stopped), and the policy would
// remove a live validator. The watcher never acts on a view older than the
// newest it has seen.
func TestWatcherRefusesAnOlderView(t *testing.T) {
	require := require.New(t)
	current := membership()
	current.Head = api.Head{AcceptedHeight: 500, AcceptedID: api.ID{'n'}}
	for i := range current.Validators {
		if current.Validators[i].NodeID == api.NodeID(gone9) { // came back: heartbeat in round 100
			current.Validators[i].Member, current.Validators[i].LastHeartbeat = true, u(100)
		}
	}
	stale := membership() // a lagging node's: gone9 never heartbeat, round 100 by its clock
	stale.Head = api.Head{AcceptedHeight: 420, AcceptedID: api.ID{'o'}}
	c := &fakeChain{facts: pchain(live, gone2, gone9, readded)}
	v := &views{list: []*api.MembershipReply{current, stale}}
	w := &Watcher{Policy: Policy{After: 5, MinValidators: 2}, Memberships: v, Subnet: c}

	out, err := w.Pass(context.Background())
	require.NoError(err)
	require.False(out.Decision.Remove(), out.Decision.Reason)
	_, err = w.Pass(context.Background())
	require.ErrorIs(err, ErrOlderView, "a view from height 420 after one from 500")
	require.Empty(c.issued, "no live validator removed")
	require.False(Fatal(err), "the next pass reads again")
}
