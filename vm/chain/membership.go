package chain

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
// P-chain height (whose set setFingerprint names), a liveness round has one
// membership; competing forks may differ, which restrict checks.
type membershipKey struct {
	height, round, generation uint64
	setFingerprint            ids.ID
}

// memberships caches the memberships built from frozen records (HRW set,
// fingerprint), so that blocks, signing and the API of one liveness round
// share one instance. It also finds a membership by fingerprint, for admitting
// transactions signed against it. Safe for concurrent use.
type memberships struct {
	mu    sync.Mutex
	limit int
	byKey map[membershipKey]*execute.Membership
	byFP  map[ids.ID]*execute.Membership
	order []membershipKey
}

func newMemberships(limit int) *memberships {
	return &memberships{limit: max(limit, 1), byKey: map[membershipKey]*execute.Membership{}, byFP: map[ids.ID]*execute.Membership{}}
}

// restrict is execute.Context.Restrict with the cache in front.
func (c *memberships) restrict(v *execute.ValidatorSet, m *state.Membership) (*execute.Membership, error) {
	k := membershipKey{m.PChainHeight, m.Round, m.Generation, v.Fingerprint()}
	c.mu.Lock()
	e, ok := c.byKey[k]
	c.mu.Unlock()
	if ok && sameMembers(e.Record(), m) {
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

// byFingerprint finds a cached membership transactions may be pinned to.
func (c *memberships) byFingerprint(fp ids.ID) (*execute.Membership, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byFP[fp]
	return e, ok
}

func sameMembers(a, b *state.Membership) bool {
	return a != nil && b != nil && a.Fallback == b.Fallback && slices.Equal(a.Members, b.Members)
}

// Snapshot is the membership the next block on the last accepted one will
// execute under, at the newest P-chain height this node has seen and the
// liveness round of its clock: what getOwner and getMembership answer and
// clients route by. It is computed by the same pure rule blocks use, from
// accepted state. Owners sign against InForce, never against this
// prediction (see package writer).
func (c *Chain) Snapshot(ctx context.Context) (*execute.Membership, error) {
	c.mu.Lock()
	h, ok := c.newest, c.haveNewest
	lastID, next := c.lastAccepted.ID(), c.lastAccepted.Block.Height+1
	c.mu.Unlock()
	if !ok {
		c.cfg.OnNoMembership()
		return nil, ErrNoMembership
	}
	round := c.CurrentRound()
	key := snapshotKey{pChainHeight: h, round: round, lastAccepted: lastID}
	if e, ok := c.snapshots.get(key); ok {
		return e, nil
	}
	v, err := c.validators.Get(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	o, err := execute.OpenMembership(c.state.Accepted(), v, round, c.genesis.Liveness(), c.genesis.Upgrades.Rules(next))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	e, err := c.memberships.restrict(v, o.Membership)
	if err != nil {
		return nil, err
	}
	c.snapshots.put(key, e)
	return e, nil
}

// InForce is the membership of the last accepted block, which owners sign
// against, or nil before the chain opened its first membership.
func (c *Chain) InForce() *execute.Membership {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inForce
}

// Membership finds a membership this node computed (in force, predicted or
// opened by a processing block) by the fingerprint transactions carry.
func (c *Chain) Membership(fingerprint ids.ID) (*execute.Membership, bool) {
	return c.memberships.byFingerprint(fingerprint)
}

// snapshotKey is everything Snapshot's answer depends on: it changes with
// every accepted block, a new P-chain height or a new liveness round.
type snapshotKey struct {
	pChainHeight, round uint64
	lastAccepted        ids.ID
}

// snapshotCache remembers Snapshot's last answer: every request of the API
// asks for it (owner checks, signing), and computing it reads state, which
// for a plugin is a round trip to the node's database.
type snapshotCache struct {
	mu         sync.Mutex
	key        snapshotKey
	membership *execute.Membership
}

func (c *snapshotCache) get(k snapshotKey) (*execute.Membership, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.membership, c.membership != nil && c.key == k
}

func (c *snapshotCache) put(k snapshotKey, e *execute.Membership) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.key, c.membership = k, e
}

// acceptedMembership is the membership of the last accepted block, or nil
// before the chain opened its first membership.
func (c *Chain) acceptedMembership(ctx context.Context) (*execute.Membership, error) {
	m, err := c.state.Accepted().Membership()
	switch {
	case errors.Is(err, state.ErrNotFound):
		return nil, nil // no membership yet
	case err != nil:
		return nil, err
	}
	v, err := c.validators.Get(ctx, m.PChainHeight)
	if err != nil {
		return nil, err
	}
	return c.memberships.restrict(v, m)
}
