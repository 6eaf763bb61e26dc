package benchmark

import (
	"cmp"
	"slices"
)

// maxExamples bounds the overlaps a Duplicates report lists.
const maxExamples = 5

// Interval is ids [Lo, Hi) handed out for one key space: a range, or the
// whole system when ids come from one shared sequence.
type Interval struct {
	Space  int
	Lo, Hi uint64
}

// Overlap is a pair of allocations that share ids: the later-starting one
// (Lo, Hi) and the earlier one it hit (OtherLo, OtherHi).
type Overlap struct {
	Space   int    `json:"space"`
	Lo      uint64 `json:"lo"`
	Hi      uint64 `json:"hi"`
	OtherLo uint64 `json:"other_lo"`
	OtherHi uint64 `json:"other_hi"`
}

// Duplicates summarises ids issued twice.
type Duplicates struct {
	// Allocations is the number of allocations checked.
	Allocations int `json:"allocations"`
	// Overlapping counts allocations that share at least one id with an
	// allocation that starts at or before them in the same key space.
	Overlapping int `json:"overlapping"`
	// IDs counts ids issued at least twice (each counted once).
	IDs uint64 `json:"ids"`
	// Examples are the first few overlaps in id order.
	Examples []Overlap `json:"examples,omitempty"`
}

// FindDuplicates checks every pair of intervals of the same key space for
// shared ids, in O(n log n). Empty intervals are ignored; ivs is not
// modified.
func FindDuplicates(ivs []Interval) Duplicates {
	s := make([]Interval, 0, len(ivs))
	for _, iv := range ivs {
		if iv.Lo < iv.Hi {
			s = append(s, iv)
		}
	}
	slices.SortFunc(s, func(a, b Interval) int {
		return cmp.Or(cmp.Compare(a.Space, b.Space), cmp.Compare(a.Lo, b.Lo), cmp.Compare(a.Hi, b.Hi))
	})
	d := Duplicates{Allocations: len(s)}
	var reach Interval   // the interval reaching furthest so far in this space
	counted := uint64(0) // ids below this are already counted as duplicated
	for i, iv := range s {
		if i == 0 || iv.Space != reach.Space {
			reach, counted = iv, 0
			continue
		}
		if iv.Lo < reach.Hi {
			d.Overlapping++
			lo := max(iv.Lo, counted)
			hi := min(iv.Hi, reach.Hi)
			if hi > lo {
				d.IDs += hi - lo
				counted = hi
			}
			if len(d.Examples) < maxExamples {
				d.Examples = append(d.Examples, Overlap{Space: iv.Space, Lo: iv.Lo, Hi: iv.Hi, OtherLo: reach.Lo, OtherHi: reach.Hi})
			}
		}
		if iv.Hi > reach.Hi {
			reach = iv
		}
	}
	return d
}

// Intervals turns successful samples into intervals: one key space per
// range, or a single space 0 when shared.
func Intervals(samples []Sample, shared bool) []Interval {
	out := make([]Interval, 0, len(samples))
	for _, s := range samples {
		if s.Failed {
			continue
		}
		space := s.Range
		if shared {
			space = 0
		}
		out = append(out, Interval{Space: space, Lo: s.First, Hi: s.First + s.Count})
	}
	return out
}
