package shadow

import (
	"fmt"
	"time"

	"github.com/s-chain/schain/operator/shadow/legacy"
)

// rangeState is what the comparator remembers about one range.
type rangeState struct {
	legacy     *intervalSet
	schain     *intervalSet
	schainEnd  uint64 // highest S-Chain end seen: the monotonicity bound
	legacyMax  uint64 // highest legacy id seen, reissues included
	truncation bool   // a tracking_truncated notice was raised
}

// Comparator is the pure core of the shadow comparison: Observe is a step
// function over observations; it reads no clock and starts no goroutines.
// It is not safe for concurrent use; wrap it (as Runner does) to share it.
type Comparator struct {
	cfg Config

	ranges    map[string]*rangeState
	untracked uint64 // observations of ranges beyond MaxRanges
	legacyMax uint64 // highest legacy id over every range, tracked or not
	// sharedLegacy replaces the per-range legacy sets when
	// Config.LegacySharedKeySpace is on, except for the ranges in ownSpace.
	sharedLegacy *intervalSet
	ownSpace     map[string]bool

	requests, agreed uint64
	counts           map[Kind]uint64
	examples         map[Kind][]Finding
	legacyLatency    histogram
	schainLatency    histogram
	firstAt, lastAt  time.Time

	gate   gate
	window windowSeries
}

// NewComparator returns an empty comparator.
func NewComparator(cfg Config) (*Comparator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid comparator config: %w", err)
	}
	var shared *intervalSet
	if cfg.LegacySharedKeySpace {
		shared = newIntervalSet(cfg.MaxIntervalsPerRange)
	}
	own := make(map[string]bool, len(cfg.LegacyOwnKeySpace))
	for _, r := range cfg.LegacyOwnKeySpace {
		own[r] = true
	}
	return &Comparator{
		cfg:          cfg,
		sharedLegacy: shared,
		ownSpace:     own,
		ranges:       make(map[string]*rangeState),
		counts:       make(map[Kind]uint64),
		examples:     make(map[Kind][]Finding),
		gate:         gate{cfg: cfg.Gate},
	}, nil
}

// Observe compares one exchange, updates the gate and returns the findings
// it produced (nil for a clean exchange).
func (c *Comparator) Observe(o Observation) []Finding {
	c.requests++
	if c.firstAt.IsZero() {
		c.firstAt = o.At
	}
	c.lastAt = o.At
	c.recordLatency(o)

	d := detector{o: o}
	c.checkAvailability(&d)
	c.checkOutcome(&d)
	rs := c.rangeState(&d)
	c.checkLegacyIDs(&d, rs)
	c.checkSChainIDs(&d, rs)

	clean := true
	for _, f := range d.findings {
		c.counts[f.Kind]++
		if len(c.examples[f.Kind]) < c.cfg.MaxExamples {
			c.examples[f.Kind] = append(c.examples[f.Kind], f)
		}
		if f.Class.ResetsGate() {
			clean = false
			c.gate.reset(f)
		}
	}
	if clean {
		c.agreed++
		c.gate.extend(o.At)
	}
	c.window.record(c.gate.point(o.At))
	return d.findings
}

// detector accumulates the findings of one observation.
type detector struct {
	o        Observation
	findings []Finding
}

func (d *detector) add(kind Kind, side Side, format string, args ...any) {
	d.findings = append(d.findings, Finding{
		Seq: d.o.Request.Seq, Range: d.o.Request.Range, Kind: kind, Class: kind.Class(),
		Side: side, At: d.o.At, Detail: fmt.Sprintf(format, args...),
	})
}

func (c *Comparator) recordLatency(o Observation) {
	if !o.Legacy.Missing {
		c.legacyLatency.record(o.Legacy.Latency)
	}
	if !o.SChain.Missing {
		c.schainLatency.record(o.SChain.Latency)
	}
}

func (c *Comparator) checkAvailability(d *detector) {
	l, s := d.o.Legacy, d.o.SChain
	if l.Missing {
		d.add(KindMissing, SideLegacy, "no legacy answer")
	}
	if s.Missing {
		d.add(KindMissing, SideSChain, "no S-Chain answer")
	}
	if late := c.cfg.LateAfter; late > 0 {
		if !l.Missing && l.Latency > late {
			d.add(KindLate, SideLegacy, "legacy answered in %v > %v", l.Latency, late)
		}
		if !s.Missing && s.Latency > late {
			d.add(KindLate, SideSChain, "S-Chain answered in %v > %v", s.Latency, late)
		}
	}
}

func (*Comparator) checkOutcome(d *detector) {
	l, s, want := d.o.Legacy, d.o.SChain, d.o.Request.Count
	if l.Missing || s.Missing {
		return
	}
	if l.ok() != s.ok() {
		d.add(KindOutcomeMismatch, SideBoth, "legacy error %v, S-Chain error %v", l.Err, s.Err)
		return
	}
	if l.ok() && (l.Result.Count != want || s.Result.Count != want) {
		d.add(KindCountMismatch, SideBoth, "requested %d, legacy %d, S-Chain %d", want, l.Result.Count, s.Result.Count)
	}
}

// rangeState returns the range's state, creating it within MaxRanges; nil
// means the range is not tracked.
func (c *Comparator) rangeState(d *detector) *rangeState {
	key := d.o.Request.Range
	if rs, ok := c.ranges[key]; ok {
		return rs
	}
	if len(c.ranges) >= c.cfg.MaxRanges {
		c.untracked++
		if c.untracked == 1 {
			d.add(KindTrackingTruncated, SideBoth, "more than %d ranges: %q and later ranges are not tracked", c.cfg.MaxRanges, key)
		}
		return nil
	}
	rs := &rangeState{legacy: newIntervalSet(c.cfg.MaxIntervalsPerRange), schain: newIntervalSet(c.cfg.MaxIntervalsPerRange)}
	c.ranges[key] = rs
	return rs
}

// Issued counts ids the legacy issued in an exchange that is no evidence
// (the run's end cut it off) toward the floors only: they were issued, so
// S-Chain must start above them.
func (c *Comparator) Issued(rangeKey string, res legacy.Result) {
	c.raiseLegacyMax(c.ranges[rangeKey], res)
}

// raiseLegacyMax raises the highest legacy id seen, over every range and
// in rs (nil: an untracked range), to res's last id.
func (c *Comparator) raiseLegacyMax(rs *rangeState, res legacy.Result) {
	if res.Count == 0 {
		return
	}
	last := res.End() - 1
	c.legacyMax = max(c.legacyMax, last)
	if rs != nil {
		rs.legacyMax = max(rs.legacyMax, last)
	}
}

func (c *Comparator) checkLegacyIDs(d *detector, rs *rangeState) {
	l := d.o.Legacy
	if !l.ok() || l.Result.Count == 0 {
		return
	}
	c.raiseLegacyMax(rs, l.Result)
	if rs == nil {
		return
	}
	set := rs.legacy
	if c.sharedLegacy != nil && !c.ownSpace[d.o.Request.Range] {
		set = c.sharedLegacy
	}
	ov := set.insert(l.Result.First, l.Result.End(), l.Result.Term)
	switch {
	case ov.sameTerm:
		d.add(KindLegacyDuplicate, SideLegacy, "ids [%d,%d) term %d overlap [%d,%d) issued in the same term",
			l.Result.First, l.Result.End(), l.Result.Term, ov.first.lo, ov.first.hi)
	case ov.otherTerm:
		d.add(KindLegacyReissue, SideLegacy, "ids [%d,%d) term %d reissue [%d,%d) first issued in term %d",
			l.Result.First, l.Result.End(), l.Result.Term, ov.first.lo, ov.first.hi, ov.first.term)
	}
	c.noteTruncation(d, rs, set)
}

func (c *Comparator) checkSChainIDs(d *detector, rs *rangeState) {
	s := d.o.SChain
	if !s.ok() || s.Result.Count == 0 || rs == nil {
		return
	}
	if ov := rs.schain.insert(s.Result.Base, s.Result.End(), 0); ov.any() {
		d.add(KindSChainOverlap, SideSChain, "ids [%d,%d) overlap [%d,%d) issued before (tx %s, P-chain height %d, owner %s)",
			s.Result.Base, s.Result.End(), ov.first.lo, ov.first.hi, s.Result.TxID, s.Result.PChainHeight, s.Result.Owner)
	} else if s.Result.Base < rs.schainEnd {
		d.add(KindSChainNonMonotonic, SideSChain, "base %d below previous end %d (tx %s)", s.Result.Base, rs.schainEnd, s.Result.TxID)
	}
	rs.schainEnd = max(rs.schainEnd, s.Result.End())
	c.noteTruncation(d, rs, rs.schain)
}

// noteTruncation raises one notice per range the first time a set it
// writes to has coarsened.
func (*Comparator) noteTruncation(d *detector, rs *rangeState, set *intervalSet) {
	if rs.truncation || set.coarsened == 0 {
		return
	}
	rs.truncation = true
	d.add(KindTrackingTruncated, SideBoth, "interval tracking coarsened: overlap findings may include ids never issued to this range")
}
