package shadow

import "sort"

// interval is the half-open id range [lo, hi) first issued under term.
type interval struct {
	lo, hi uint64
	term   uint64
}

// overlap summarises what a new interval hit.
type overlap struct {
	sameTerm  bool     // hit ids first issued under the same term
	otherTerm bool     // hit ids first issued under another term
	first     interval // the first interval hit
}

func (o overlap) any() bool { return o.sameTerm || o.otherTerm }

// intervalSet tracks the ids issued for one range as sorted, disjoint
// intervals labelled with the term that first issued them. Touching
// intervals of one term are merged; beyond limit intervals the set coarsens
// (merges neighbours across gaps), which can only add false overlaps, never
// hide a real one.
type intervalSet struct {
	ivs       []interval
	limit     int
	coarsened uint64 // coarsening passes so far
}

func newIntervalSet(limit int) *intervalSet { return &intervalSet{limit: limit} }

// insert records [lo, hi) under term and reports what it overlapped. Only
// the ids not already tracked are added, so reissued ids keep the term that
// first issued them.
func (s *intervalSet) insert(lo, hi, term uint64) overlap {
	if lo >= hi {
		return overlap{}
	}
	if n := len(s.ivs); n == 0 || lo >= s.ivs[n-1].hi { // common case: append
		s.appendMerged(interval{lo, hi, term})
		s.bound()
		return overlap{}
	}
	start := sort.Search(len(s.ivs), func(i int) bool { return s.ivs[i].hi > lo })
	end := start
	var ov overlap
	var merged []interval
	cursor := lo
	for ; end < len(s.ivs) && s.ivs[end].lo < hi; end++ {
		iv := s.ivs[end]
		if !ov.any() {
			ov.first = iv
		}
		if iv.term == term {
			ov.sameTerm = true
		} else {
			ov.otherTerm = true
		}
		if iv.lo > cursor {
			merged = append(merged, interval{cursor, iv.lo, term})
		}
		merged = append(merged, iv)
		cursor = max(cursor, iv.hi)
	}
	if cursor < hi {
		merged = append(merged, interval{cursor, hi, term})
	}
	s.splice(start, end, merged)
	s.bound()
	return ov
}

// splice replaces ivs[start:end] with repl, merging touching same-term
// neighbours.
func (s *intervalSet) splice(start, end int, repl []interval) {
	tail := append([]interval(nil), s.ivs[end:]...)
	s.ivs = s.ivs[:start]
	for _, iv := range repl {
		s.appendMerged(iv)
	}
	for _, iv := range tail {
		s.appendMerged(iv)
	}
}

func (s *intervalSet) appendMerged(iv interval) {
	if n := len(s.ivs); n > 0 && s.ivs[n-1].hi == iv.lo && s.ivs[n-1].term == iv.term {
		s.ivs[n-1].hi = iv.hi
		return
	}
	s.ivs = append(s.ivs, iv)
}

// bound coarsens the set to at most three quarters of limit by merging
// neighbours pairwise, same-term pairs first. A cross-term merge keeps the
// older term, so later overlaps there count as reissues, not duplicates.
func (s *intervalSet) bound() {
	if len(s.ivs) <= s.limit {
		return
	}
	target := max(1, s.limit*3/4)
	for _, sameTermOnly := range []bool{true, false} {
		for len(s.ivs) > target {
			before := len(s.ivs)
			s.mergePairs(sameTermOnly, before-target)
			s.coarsened++
			if len(s.ivs) == before {
				break
			}
		}
	}
}

// mergePairs merges up to budget disjoint neighbour pairs in one pass.
func (s *intervalSet) mergePairs(sameTermOnly bool, budget int) {
	out := s.ivs[:0]
	for i := 0; i < len(s.ivs); i++ {
		iv := s.ivs[i]
		if budget > 0 && i+1 < len(s.ivs) && (!sameTermOnly || s.ivs[i+1].term == iv.term) {
			iv.hi, iv.term = s.ivs[i+1].hi, min(iv.term, s.ivs[i+1].term)
			i++
			budget--
		}
		out = append(out, iv)
	}
	s.ivs = out
}

func (s *intervalSet) len() int { return len(s.ivs) }
