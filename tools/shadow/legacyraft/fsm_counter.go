package legacyraft

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"sync"

	"github.com/hashicorp/raft"
)

var (
	_ raft.BatchingFSM = (*counterFSM)(nil)
	_ raft.FSMSnapshot = (*counterSnapshot)(nil)
)

// allocOutcome is the FSM's answer to one record of a batch.
type allocOutcome struct {
	first uint64
	err   error
}

// batchResponse is what counterFSM.Apply returns for a cmdAllocate entry:
// one outcome per record, in record order, and the entry's term.
type batchResponse struct {
	term     uint64
	outcomes []allocOutcome
}

// counterFSM holds the per-range counters of one raft group. Apply is
// deterministic: every replica hands out the same bases for the same log.
type counterFSM struct {
	group  int
	groups int // 0 disables the slot ownership check (one group owns all)

	mu   sync.Mutex
	next map[string]uint64 // guarded by mu; next id per range, absent = 1
}

func newCounterFSM(group, groups int) *counterFSM {
	return &counterFSM{group: group, groups: groups, next: make(map[string]uint64)}
}

// Apply applies one batch of allocations. The slot ownership check uses the
// static slot % groups assignment, which only an explicit slot migration
// (not implemented) could change, so it is identical on every replica.
func (f *counterFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	records, err := decodeAllocBatch(l.Data)
	if err != nil {
		return err
	}
	resp := &batchResponse{term: l.Term, outcomes: make([]allocOutcome, len(records))}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range records {
		resp.outcomes[i] = f.applyRecord(r)
	}
	return resp
}

func (f *counterFSM) applyRecord(r allocRecord) allocOutcome {
	if f.groups > 0 {
		if slot := Slot(r.rangeKey); slot%f.groups != f.group {
			return allocOutcome{err: fmt.Errorf("%w: slot %d is not in group %d", errWrongGroup, slot, f.group)}
		}
	}
	first := f.next[r.rangeKey]
	if first == 0 {
		first = 1
	}
	if r.count == 0 || r.count > math.MaxUint64-first {
		return allocOutcome{err: fmt.Errorf("%w: count %d at %d", errBadCount, r.count, first)}
	}
	f.next[r.rangeKey] = first + r.count
	return allocOutcome{first: first}
}

// ApplyBatch applies consecutive committed entries in one pass.
func (f *counterFSM) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		out[i] = f.Apply(l)
	}
	return out
}

// Snapshot copies the counters; encoding happens in Persist.
func (f *counterFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &counterSnapshot{Next: maps.Clone(f.next)}, nil
}

// Restore replaces all counters with the snapshot's.
func (f *counterFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s counterSnapshot
	if err := json.NewDecoder(rc).Decode(&s); err != nil {
		return fmt.Errorf("decode counter snapshot: %w", err)
	}
	if s.Next == nil {
		s.Next = make(map[string]uint64)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next = s.Next
	return nil
}

// nextFor returns the next id of rangeKey (tests and status only).
func (f *counterFSM) nextFor(rangeKey string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.next[rangeKey]; n != 0 {
		return n
	}
	return 1
}

type counterSnapshot struct {
	Next map[string]uint64 `json:"next"`
}

func (s *counterSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist counter snapshot: %w", err)
	}
	return sink.Close()
}

func (*counterSnapshot) Release() {}
