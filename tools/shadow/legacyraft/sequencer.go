package legacyraft

import "sync"

// sequencer is the SeaweedFS master's in-memory file-key sequencer: it starts
// at 1, is never persisted and is raised only by reports of written keys.
// Losing it on a leader change is the defect the shadow comparison exposes.
type sequencer struct {
	mu   sync.Mutex
	next uint64 // guarded by mu; the next key to hand out
}

func newSequencer() *sequencer { return &sequencer{next: 1} }

// nextFileID returns the first of count keys and advances past them.
func (s *sequencer) nextFileID(count uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.next
	s.next += count
	return first
}

// setMax raises the sequencer above a key known to be written.
func (s *sequencer) setMax(seen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seen+1 > s.next {
		s.next = seen + 1
	}
}
