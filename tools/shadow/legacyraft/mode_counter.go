package legacyraft

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var _ mode = (*counterMode)(nil)

// counterMode keeps per-range counters in raft FSMs (ModeReplicated: one
// group; ModeSlots: the group routed from the range's hash slot), so ids
// survive leader changes.
type counterMode struct {
	node *Node
}

func (m *counterMode) allocate(ctx context.Context, rangeKey string, count uint64) (legacy.Result, error) {
	g, err := m.resolve(rangeKey)
	if err != nil {
		return legacy.Result{}, err
	}
	if g.raft.State() != raft.Leader {
		return legacy.Result{}, m.node.notLeader(g)
	}
	d, err := g.batcher.submit(ctx, allocRecord{rangeKey: rangeKey, count: count})
	if err != nil {
		return legacy.Result{}, err
	}
	return legacy.Result{First: d.first, Count: count, Leader: m.node.cfg.ID, Term: d.term}, nil
}

// resolve maps a range to its group through one route table snapshot; a
// missing route is an explicit not-ready error, never a fallback.
func (m *counterMode) resolve(rangeKey string) (*group, error) {
	t := m.node.routes.load()
	if t == nil {
		return m.node.groups[0], nil
	}
	slot := Slot(rangeKey)
	id, ok := t.Group(slot)
	if !ok || id >= len(m.node.groups) {
		return nil, fmt.Errorf("slot %d (route revision %d): %w", slot, t.Revision(), ErrNoRoute)
	}
	return m.node.groups[id], nil
}

// reportWritten is a no-op: durable counters need no heartbeats.
func (*counterMode) reportWritten(string, uint64) error { return nil }
