package legacyraft

import (
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

var (
	_ raft.FSM         = (*volumeFSM)(nil)
	_ raft.FSMSnapshot = volumeSnapshot{}
)

// volumeFSM is the SeaweedFS master's only replicated state: the max volume
// id. File keys are deliberately absent: the real master keeps them in memory.
type volumeFSM struct {
	maxVolumeID atomic.Uint64
}

// Apply raises the max volume id; it never lowers it.
func (f *volumeFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	id, err := decodeMaxVolumeID(l.Data)
	if err != nil {
		return err
	}
	for {
		cur := f.maxVolumeID.Load()
		if id <= cur || f.maxVolumeID.CompareAndSwap(cur, id) {
			return f.maxVolumeID.Load()
		}
	}
}

// Snapshot captures the id; it is one word, so no copy-on-write is needed.
func (f *volumeFSM) Snapshot() (raft.FSMSnapshot, error) {
	return volumeSnapshot{MaxVolumeID: f.maxVolumeID.Load()}, nil
}

// Restore replaces the id with the snapshot's.
func (f *volumeFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s volumeSnapshot
	if err := json.NewDecoder(rc).Decode(&s); err != nil {
		return fmt.Errorf("decode volume snapshot: %w", err)
	}
	f.maxVolumeID.Store(s.MaxVolumeID)
	return nil
}

type volumeSnapshot struct {
	MaxVolumeID uint64 `json:"max-volume-id"`
}

func (s volumeSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist volume snapshot: %w", err)
	}
	return sink.Close()
}

func (volumeSnapshot) Release() {}
