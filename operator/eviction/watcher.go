package eviction

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/operator/subnet"
)

// Memberships gives S-Chain's current membership. It must never answer
// from a node that lags behind: the CLI gives the client's fresh reads
// (the newest view of nodes holding more than 2/3 of the stake).
type Memberships interface {
	GetMembership(ctx context.Context) (*api.MembershipReply, error)
}

// ErrOlderView: the membership view read is older than one this watcher
// already acted on (a node behind the chain answered): it counts as out
// validators whose heartbeats landed since, so the pass decides nothing.
var ErrOlderView = errors.New("eviction: S-Chain's membership view is older than one already seen")

// Subnet reads and changes the subnet's validator set (subnet.Admin does).
type Subnet interface {
	Facts(ctx context.Context) (*subnet.Facts, error)
	PlanRemove(ctx context.Context, nodeID ids.NodeID) (*subnet.Plan, error)
	Issue(ctx context.Context, p *subnet.Plan) (*subnet.Receipt, error)
}

// Watcher applies a Policy: each Pass reads S-Chain's membership view and the
// P-chain's facts, and removes at most one validator. It then holds every
// further removal until S-Chain's membership view no longer lists the removed
// validator, so that the next decision is made on records that already
// reflect the last one.
//
// A Watcher is not safe for concurrent use; Run calls Pass from one
// goroutine.
type Watcher struct {
	Policy      Policy
	Memberships Memberships
	Subnet      Subnet
	// DryRun: plan removals (every check, the fee) but issue nothing.
	DryRun bool
	// PassTimeout bounds each pass of Run (0: none), so that a node that
	// stops answering delays the watcher by one pass, not forever.
	PassTimeout time.Duration

	// pending are the validators this watcher removed that S-Chain's
	// membership view still lists.
	pending map[ids.NodeID]struct{}
	// newest is the newest view's last accepted block: no older view is
	// acted on.
	newest api.Head
}

// Outcome is what one pass saw and did.
type Outcome struct {
	Round     uint64     `json:"round"`
	Standings []Standing `json:"standings"`
	Decision  Decision   `json:"decision"`
	// Plan is the removal planned (also in a dry run); Receipt its commit.
	Plan    *subnet.Plan    `json:"plan,omitempty"`
	Receipt *subnet.Receipt `json:"receipt,omitempty"`
}

// Pass evaluates the policy once and, unless DryRun, removes the validator
// it names, waiting until the P-chain commits the removal.
func (w *Watcher) Pass(ctx context.Context) (*Outcome, error) {
	if err := w.Policy.Verify(); err != nil {
		return nil, err
	}
	e, err := w.Memberships.GetMembership(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading S-Chain's membership view: %w", err)
	}
	if err := w.notOlder(e.Head); err != nil {
		return nil, err
	}
	f, err := w.Subnet.Facts(ctx)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Round: e.Round, Standings: Assess(e, f)}
	if held, ok := w.holding(out.Standings); ok {
		out.Decision = Decision{Reason: fmt.Sprintf("waiting for S-Chain's membership view to drop %s, removed earlier: removing nobody else meanwhile", held)}
		return out, nil
	}
	out.Decision = w.Policy.Decide(e, out.Standings)
	if !out.Decision.Remove() {
		return out, nil
	}
	out.Plan, err = w.Subnet.PlanRemove(ctx, out.Decision.NodeID)
	if err != nil || w.DryRun {
		return out, err
	}
	out.Receipt, err = w.Subnet.Issue(ctx, out.Plan)
	if err != nil {
		return out, err
	}
	if w.pending == nil {
		w.pending = map[ids.NodeID]struct{}{}
	}
	w.pending[out.Decision.NodeID] = struct{}{}
	return out, nil
}

// notOlder refuses a view older than the newest seen, and remembers a
// newer one. A view without a head (a node older than heads) cannot be
// compared once a head was seen.
func (w *Watcher) notOlder(h api.Head) error {
	if h.AcceptedHeight < w.newest.AcceptedHeight {
		return fmt.Errorf("%w: at height %d, after one at height %d", ErrOlderView, h.AcceptedHeight, w.newest.AcceptedHeight)
	}
	w.newest = h
	return nil
}

// holding forgets pending removals the membership view no longer lists and returns
// one it still does.
func (w *Watcher) holding(ss []Standing) (ids.NodeID, bool) {
	listed := map[ids.NodeID]bool{}
	for _, s := range ss {
		listed[s.NodeID] = s.InMembershipView
	}
	var held ids.NodeID
	found := false
	for id := range w.pending {
		if !listed[id] {
			delete(w.pending, id)
			continue
		}
		held, found = id, true
	}
	return held, found
}

// Fatal reports whether a pass's error will not go away by retrying: the
// key or the subnet is wrong, or the policy is.
func Fatal(err error) bool {
	for _, target := range []error{
		ErrPolicy, subnet.ErrNotOwner, subnet.ErrThreshold, subnet.ErrNotPermissioned,
		subnet.ErrNoSubnet, subnet.ErrKeyFile,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// Run makes a pass every interval until ctx ends, giving each outcome (or
// error) to report. Transient errors (a node down, a removal the P-chain
// dropped) are reported and retried at the next pass; Run returns the
// first Fatal one, or nil once ctx ends.
func (w *Watcher) Run(ctx context.Context, every time.Duration, report func(*Outcome, error)) error {
	if err := w.Policy.Verify(); err != nil {
		return err
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		out, err := w.timedPass(ctx)
		if ctx.Err() != nil {
			return nil
		}
		report(out, err)
		if Fatal(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (w *Watcher) timedPass(ctx context.Context) (*Outcome, error) {
	if w.PassTimeout <= 0 {
		return w.Pass(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, w.PassTimeout)
	defer cancel()
	return w.Pass(ctx)
}
