// Package pairs turns the pairs that schain-shadow masters record (package
// schainseq) into shadow observations, so that live SeaweedFS traffic goes
// through the same comparator, cutover gate, report and plots as `schain
// shadow run`.
//
// Every master of a cluster writes its own pairs file in its -mdir; only the
// leader allocates, and leaders change, so the files of all masters are
// merged by the time the stock sequencer answered: its order (so the shared
// legacy key space is tracked in order, without false overlaps from
// coarsening), and each range's S-Chain order (a range's mirrors are sent
// first in first out). Mirrors dropped by a full queue are not pairs: they are
// counted (ShadowState.Dropped) and reported beside the comparison, and the
// legacy maximum used for cutover floors includes them.
package pairs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/shadow"
	"github.com/s-chain/schain/shadow/legacy"
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
	slices.SortStableFunc(s.Pairs, func(a, b schainseq.Pair) int { return issued(a).Compare(issued(b)) })
	return s, nil
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
		o.SChain.Result = shadow.SChainResult{Base: r.Base, Count: r.Count, TxID: r.TxID, Epoch: r.Epoch, Owner: r.Owner}
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
