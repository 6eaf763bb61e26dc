// Package pairs turns the pairs that schain-shadow masters record (package
// schainseq) into shadow observations, so that live SeaweedFS traffic goes
// through the same comparator, cutover gate, report and plots as `schain
// shadow run`.
//
// Every master of a cluster writes its own pairs file in its -mdir; only the
// leader allocates, and leaders change, so the files of all masters are
// merged: each process's pairs in the stock sequencer's order (Pair.Seq:
// the shared legacy key space is then tracked in order, without false
// overlaps from coarsening, and each range's S-Chain answers in order, a
// range's mirrors being sent first in first out), the processes by time. Mirrors dropped by a full queue are not pairs: they are
// counted (ShadowState.Dropped) and reported beside the comparison, and the
// legacy maximum used for cutover floors includes them.
//
// Who it is for: operators. It is a library of the operator's tools and ships in
// the schain binary (cmd/schain); it links no test harness and no tools
// (tests/layout).
package pairs

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
	"github.com/s-chain/schain/seaweedfs/schainseq"
)

// Set is the merged content of pairs directories.
type Set struct {
	// Pairs, oldest first.
	Pairs []schainseq.Pair
	// States are the latest counters of each master process (master and
	// term).
	States map[Process]schainseq.ShadowState
	// Files read.
	Files []string
}

// Process names one master process.
type Process struct {
	Master string `json:"master"`
	Term   uint64 `json:"term"`
}

// Load reads the pairs of every directory (each a master's
// <mdir>/schain-shadow) and merges them by time. Directories without a
// pairs file are an error only if none has one.
func Load(dirs ...string) (*Set, error) {
	s := &Set{States: map[Process]schainseq.ShadowState{}}
	var missing []error
	for _, dir := range dirs {
		files, err := schainseq.PairFiles(dir)
		if err != nil {
			missing = append(missing, err)
			continue
		}
		for _, f := range files {
			if err := s.read(f); err != nil {
				return nil, err
			}
			s.Files = append(s.Files, f)
		}
	}
	if len(s.Files) == 0 {
		return nil, fmt.Errorf("no pairs: %w", errors.Join(missing...))
	}
	s.Pairs = merge(s.Pairs)
	return s, nil
}

// merge orders pairs for the comparator: each master process's pairs in
// its sequence order (the stock sequencer's), the processes' streams merged
// by the time their next pair was issued.
func merge(ps []schainseq.Pair) []schainseq.Pair {
	streams := map[Process][]schainseq.Pair{}
	for _, p := range ps {
		k := Process{p.Master, p.Term}
		streams[k] = append(streams[k], p)
	}
	heads := make([][]schainseq.Pair, 0, len(streams))
	for _, st := range streams {
		slices.SortStableFunc(st, func(a, b schainseq.Pair) int { return cmp.Compare(a.Seq, b.Seq) })
		heads = append(heads, st)
	}
	out := make([]schainseq.Pair, 0, len(ps))
	for {
		best := -1
		for i, h := range heads {
			if len(h) > 0 && (best < 0 || issued(h[0]).Before(issued(heads[best][0]))) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, heads[best][0])
		heads[best] = heads[best][1:]
	}
}

func (s *Set) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	err = schainseq.ReadPairs(f, func(p schainseq.Pair) error {
		if p.Kind == schainseq.KindState {
			if p.State != nil {
				s.States[Process{p.Master, p.Term}] = *p.State
			}
			return nil
		}
		if p.Legacy == nil || p.Legacy.Count == 0 || p.Range == "" {
			return fmt.Errorf("%s: pair without legacy answer or range: %+v", path, p)
		}
		s.Pairs = append(s.Pairs, p)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// issued is when the stock sequencer answered (At for pairs written before
// Issued existed).
func issued(p schainseq.Pair) time.Time {
	if p.Issued.IsZero() {
		return p.At
	}
	return p.Issued
}

// Totals sums the counters of every master process.
func (s *Set) Totals() schainseq.ShadowState {
	var t schainseq.ShadowState
	for _, st := range s.States {
		t.Offered += st.Offered
		t.Dropped += st.Dropped
		t.Mirrored += st.Mirrored
		t.Failed += st.Failed
		t.Unrouted += st.Unrouted
		t.LegacyMaxKey = max(t.LegacyMaxKey, st.LegacyMaxKey)
		t.HeartbeatMaxKey = max(t.HeartbeatMaxKey, st.HeartbeatMaxKey)
		t.MaxVolumeID = max(t.MaxVolumeID, st.MaxVolumeID)
	}
	return t
}

// LegacyMax is the highest legacy file key and volume id the pairs and the
// masters' counters show (dropped mirrors included).
func (s *Set) LegacyMax() (key uint64, volume uint32) {
	t := s.Totals()
	key, volume = max(t.LegacyMaxKey, t.HeartbeatMaxKey), t.MaxVolumeID
	for _, p := range s.Pairs {
		last := p.Legacy.First + p.Legacy.Count - 1
		switch p.Kind {
		case schainseq.KindKey:
			key = max(key, last)
		case schainseq.KindVolume:
			volume = max(volume, uint32(min(last, 1<<32-1)))
		}
	}
	return key, volume
}

// Observation converts pair i (its sequence number is i+1).
func Observation(i int, p schainseq.Pair) shadow.Observation {
	o := shadow.Observation{
		Request: shadow.Request{Seq: uint64(i + 1), Range: p.Range, Count: p.Legacy.Count},
		At:      p.At,
		Legacy: shadow.LegacySide{
			Result:  legacy.Result{First: p.Legacy.First, Count: p.Legacy.Count, Leader: p.Master, Term: p.Term},
			Latency: time.Duration(p.Legacy.NS),
		},
		SChain: shadow.SChainSide{Latency: time.Duration(p.SChainNS), Missing: p.Missing},
	}
	switch {
	case p.Missing:
	case p.SChain != nil:
		r := p.SChain
		o.SChain.Result = shadow.SChainResult{Base: r.Base, Count: r.Count, TxID: r.TxID, PChainHeight: r.PChainHeight, Owner: r.Owner}
	default:
		o.SChain.Err = errors.New(p.Error)
	}
	return o
}

// ComparatorConfig adapts a comparator configuration to SeaweedFS: file
// keys share one legacy key space (the stock sequencer is global), volume
// ids have their own.
func ComparatorConfig(cfg shadow.Config, prefix string) shadow.Config {
	cfg.LegacySharedKeySpace = true
	cfg.LegacyOwnKeySpace = append(slices.Clone(cfg.LegacyOwnKeySpace), schainseq.VolumeRange(prefix))
	return cfg
}

// Compare feeds every pair to a new comparator and returns it.
func (s *Set) Compare(cfg shadow.Config) (*shadow.Comparator, error) {
	c, err := shadow.NewComparator(cfg)
	if err != nil {
		return nil, err
	}
	for i, p := range s.Pairs {
		c.Observe(Observation(i, p))
	}
	return c, nil
}
