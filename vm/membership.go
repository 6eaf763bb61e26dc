package vm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/vm/execute"
)

// membershipKey identifies a frozen membership along one chain: within a
// P-chain height (whose set setFingerprint names), a liveness epoch has one
// membership; competing forks may differ, which restrict checks.
type membershipKey struct {
	height, round, generation uint64
	setFingerprint            ids.ID
}

// memberships caches the epochs built from frozen memberships (HRW set,
// fingerprint), so that blocks, signing and the API of one liveness epoch
// share one instance. It also finds an epoch by fingerprint, for admitting
// transactions signed against it. Safe for concurrent use.
type memberships struct {
	mu    sync.Mutex
	limit int
	byKey map[membershipKey]*execute.Epoch
	byFP  map[ids.ID]*execute.Epoch
	order []membershipKey
}

func newMemberships(limit int) *memberships {
	return &memberships{limit: max(limit, 1), byKey: map[membershipKey]*execute.Epoch{}, byFP: map[ids.ID]*execute.Epoch{}}
}

// restrict is execute.Context.Restrict with the cache in front.
func (c *memberships) restrict(v *execute.Epoch, m *state.Membership) (*execute.Epoch, error) {
	k := membershipKey{m.PChainHeight, m.Round, m.Generation, v.Fingerprint()}
	c.mu.Lock()
	e, ok := c.byKey[k]
	c.mu.Unlock()
	if ok && sameMembers(e.Membership(), m) {
		return e, nil
	}
	e, err := v.Restrict(m)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[k]; !ok {
		c.order = append(c.order, k)
	}
	c.byKey[k] = e
	c.byFP[e.Fingerprint()] = e
	for len(c.order) > c.limit {
		old := c.order[0]
		c.order = c.order[1:]
		if o, ok := c.byKey[old]; ok && c.byFP[o.Fingerprint()] == o {
			delete(c.byFP, o.Fingerprint())
		}
		delete(c.byKey, old)
	}
	return e, nil
}

// byFingerprint finds a cached epoch transactions may be pinned to.
func (c *memberships) byFingerprint(fp ids.ID) (*execute.Epoch, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byFP[fp]
	return e, ok
}

func sameMembers(a, b *state.Membership) bool {
	return a != nil && b != nil && a.Fallback == b.Fallback && slices.Equal(a.Members, b.Members)
}

// round is the liveness epoch of a timestamp (unix milliseconds).
func (vm *VM) round(ts uint64) uint64 { return vm.genesis.Liveness().Round(ts) }

// currentRound is the liveness epoch of this node's clock, or of the last
// accepted block if that is ahead: what new transactions are signed in.
func (vm *VM) currentRound() uint64 {
	vm.mu.Lock()
	lastTs := vm.lastAccepted.Block.Timestamp
	vm.mu.Unlock()
	return vm.round(max(uint64(vm.cfg.Clock().UnixMilli()), lastTs))
}

// Snapshot is the epoch this node pins new transactions to and names
// owners by (the API's getOwner and getEpoch): the membership the next block on the last accepted one will
// execute under, at the newest P-chain height this node has seen and the
// liveness epoch of its clock. It is computed by the same pure rule blocks
// use, from accepted state; if a processing block changes the outcome
// (a heartbeat at an epoch boundary), the transaction fails the fingerprint
// check and its owner re-pins it: a retry, never a second writer.
func (vm *VM) Snapshot(ctx context.Context) (*execute.Epoch, error) {
	vm.mu.Lock()
	h, ok := vm.epoch, vm.haveEpoch
	lastID := vm.lastAccepted.ID()
	vm.mu.Unlock()
	if !ok {
		return nil, vm.errNoEpoch()
	}
	round := vm.currentRound()
	key := snapshotKey{pChainHeight: h, round: round, lastAccepted: lastID}
	if e, ok := vm.snapshots.get(key); ok {
		return e, nil
	}
	v, err := vm.epochs.Get(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	o, err := execute.OpenMembership(vm.state.Accepted(), v, round, vm.genesis.Liveness())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	e, err := vm.memberships.restrict(v, o.Membership)
	if err != nil {
		return nil, err
	}
	vm.snapshots.put(key, e)
	return e, nil
}

// snapshotKey is everything Snapshot's answer depends on: it changes with
// every accepted block, a new P-chain height or a new liveness epoch.
type snapshotKey struct {
	pChainHeight, round uint64
	lastAccepted        ids.ID
}

// snapshotCache remembers Snapshot's last answer: every request of the API
// asks for it (owner checks, signing), and computing it reads state, which
// for a plugin is a round trip to the node's database.
type snapshotCache struct {
	mu    sync.Mutex
	key   snapshotKey
	epoch *execute.Epoch
}

func (c *snapshotCache) get(k snapshotKey) (*execute.Epoch, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch, c.epoch != nil && c.key == k
}

func (c *snapshotCache) put(k snapshotKey, e *execute.Epoch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key, c.epoch = k, e
}

// ErrMembershipOpening is the NotReady of a range that moves to this node
// when the next block opens the new liveness epoch's membership: the range
// is this node's in the membership that block will have, not yet in the one
// in force.
var ErrMembershipOpening = errors.New("vm: ownership moves to this node when the next block opens the new membership")

// signingEpoch is the epoch this node signs its transactions against, after
// checking that it owns every range: the membership in force at the last
// accepted block. Signing only against a membership in force is what makes
// re-pinning safe: a transaction is re-signed only once the membership it
// was signed against has been superseded on the accepted chain, and a
// superseded membership never comes back (a generation only grows), so the
// replaced transaction can never be applied. A range this node owns in the
// membership the next block will have (Snapshot) but not yet in the one in
// force answers ErrNotReady, and makes the next block open the new
// membership; a range it owns now but not in the next membership answers
// NotOwner with the next owner.
func (vm *VM) signingEpoch(ctx context.Context, ranges []string) (*execute.Epoch, error) {
	next, err := vm.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if err := next.CheckOwner(ranges, vm.cfg.NodeID); err != nil {
		return nil, err
	}
	vm.mu.Lock()
	now := vm.inForce
	vm.mu.Unlock()
	if now == nil {
		return nil, vm.errNoEpoch()
	}
	if err := now.CheckOwner(ranges, vm.cfg.NodeID); err != nil {
		vm.mu.Lock()
		vm.membershipWanted = true
		vm.mu.Unlock()
		vm.tracker.wake()
		// Not wrapped: the caller must not route to the owner in force,
		// which is handing the range over.
		return nil, fmt.Errorf("%w: %w (%v; retry shortly)", ErrNotReady, ErrMembershipOpening, err)
	}
	return now, nil
}

// acceptedSnapshot is the epoch of the last accepted block's membership, or
// nil before the chain opened its first epoch.
func (vm *VM) acceptedSnapshot(ctx context.Context) (*execute.Epoch, error) {
	m, err := vm.state.Accepted().Membership()
	switch {
	case errors.Is(err, state.ErrNotFound):
		return nil, nil // no membership yet: nothing is stale
	case err != nil:
		return nil, err
	}
	v, err := vm.epochs.Get(ctx, m.PChainHeight)
	if err != nil {
		return nil, err
	}
	return vm.memberships.restrict(v, m)
}

// InForce is the membership of the last accepted block, which this node
// signs against, or nil before the chain opened its first epoch.
func (vm *VM) InForce() *execute.Epoch {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.inForce
}
