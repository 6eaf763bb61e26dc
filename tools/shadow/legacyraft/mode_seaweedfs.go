package legacyraft

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

var _ mode = (*seaweedMode)(nil)

// seaweedMode reproduces the SeaweedFS master: raft replicates only the max
// volume id; file keys come from this node's in-memory sequencer, used only
// while it leads, and raised only by written-key reports. A new leader thus
// starts from whatever it last knew (1 if it never led), and keys assigned
// but never reported written are reissued.
type seaweedMode struct {
	node  *Node
	group *group
	fsm   *volumeFSM
	seq   *sequencer
}

// onLeader grows the first volume, as a master does when it finds none.
func (m *seaweedMode) onLeader(g *group) {
	if m.fsm.maxVolumeID.Load() == 0 {
		g.raft.Apply(encodeMaxVolumeID(1), m.node.cfg.ApplyTimeout)
	}
}

func (m *seaweedMode) allocate(_ context.Context, _ string, count uint64) (legacy.Result, error) {
	// Term first: raft demotes the state before raising the term, so a term
	// read here is one in which this node really led if State says Leader.
	term := m.group.raft.CurrentTerm()
	if m.group.raft.State() != raft.Leader {
		return legacy.Result{}, m.node.notLeader(m.group)
	}
	since := m.group.leadership()
	if since.IsZero() || time.Since(since) < m.node.cfg.WarmUp {
		return legacy.Result{}, ErrWarmingUp
	}
	if m.fsm.maxVolumeID.Load() == 0 {
		return legacy.Result{}, ErrNoVolume
	}
	first := m.seq.nextFileID(count)
	return legacy.Result{First: first, Count: count, Leader: m.node.cfg.ID, Term: term}, nil
}

// reportWritten raises the sequencer like a volume heartbeat; the key space
// is global (one sequencer for all ranges), as in SeaweedFS.
func (m *seaweedMode) reportWritten(_ string, maxWritten uint64) error {
	if m.group.raft.State() != raft.Leader {
		return m.node.notLeader(m.group)
	}
	m.seq.setMax(maxWritten)
	return nil
}
