package history

import (
	"fmt"
	"sort"
)

// counterOps are one counter's allocations and reads.
type counterOps struct {
	acked    []Operation // answered allocations
	attempts []Operation // allocations that may have taken effect
	reads    []Operation // answered reads
}

// checkCounters checks every counter, in name order.
func checkCounters(h History, start map[string]uint64) []Anomaly {
	byCounter := make(map[string]*counterOps)
	get := func(name string) *counterOps {
		if byCounter[name] == nil {
			byCounter[name] = &counterOps{}
		}
		return byCounter[name]
	}
	for _, op := range h {
		switch in := op.Input.(type) {
		case Allocate:
			get(in.Counter).addAllocation(op)
		case ReadCounter:
			if op.Status == Ok {
				c := get(in.Counter)
				c.reads = append(c.reads, op)
			}
		}
	}
	names := make([]string, 0, len(byCounter))
	for n := range byCounter {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Anomaly
	for _, n := range names {
		c := byCounter[n]
		out = append(out, c.reissued(n)...)
		out = append(out, c.readsOutOfBounds(n, start[n])...)
	}
	return out
}

func (c *counterOps) addAllocation(op Operation) {
	switch {
	case op.Status == Ok:
		c.acked = append(c.acked, op)
		c.attempts = append(c.attempts, op)
	case op.open():
		c.attempts = append(c.attempts, op)
	}
}

// allocated is how many ids op took: what it answered, else what it asked.
func allocated(op Operation) uint64 {
	if op.Status == Ok {
		return op.Result.(Allocation).Count
	}
	return op.Input.(Allocate).Count
}

// reissued reports every acknowledged allocation that overlaps one with a
// lower base, naming the one reaching furthest.
func (c *counterOps) reissued(name string) []Anomaly {
	allocs := append([]Operation(nil), c.acked...)
	sort.SliceStable(allocs, func(i, j int) bool {
		return allocs[i].Result.(Allocation).Base < allocs[j].Result.(Allocation).Base
	})
	var out []Anomaly
	var widest *Operation
	for i := range allocs {
		a := allocs[i].Result.(Allocation)
		if a.Count == 0 {
			continue
		}
		if widest != nil {
			w := widest.Result.(Allocation)
			if a.Base < w.Base+w.Count {
				out = append(out, Anomaly{Kind: ReissuedID, Subject: name, Ops: []Operation{*widest, allocs[i]},
					Detail: fmt.Sprintf("ids [%d, %d) issued by both #%d and #%d", a.Base, min(a.Base+a.Count, w.Base+w.Count), widest.ID, allocs[i].ID)})
			}
			if a.Base+a.Count <= w.Base+w.Count {
				continue
			}
		}
		widest = &allocs[i]
	}
	return out
}

// readsOutOfBounds reports every read whose next id lies outside [start +
// acknowledged before the read's call, start + attempted before its
// return].
func (c *counterOps) readsOutOfBounds(name string, start uint64) []Anomaly {
	done := newCumulative(c.acked, func(op Operation) int64 { return op.Return })
	begun := newCumulative(c.attempts, func(op Operation) int64 { return op.Call })
	var out []Anomaly
	for _, r := range c.reads {
		next := r.Result.(CounterValue).Next
		lo := start + done.before(r.Call)
		hi := start + begun.atOrBefore(r.Return)
		if next < lo || next > hi {
			out = append(out, Anomaly{Kind: CounterOutOfBounds, Subject: name, Ops: []Operation{r},
				Detail: fmt.Sprintf("#%d read next %d, outside [%d acknowledged before it, %d attempted before it completed]", r.ID, next, lo, hi)})
		}
	}
	return out
}

// cumulative sums allocation sizes by time.
type cumulative struct {
	times []int64
	sums  []uint64 // sums[i]: the sizes of the first i allocations
}

func newCumulative(ops []Operation, at func(Operation) int64) cumulative {
	sorted := append([]Operation(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return at(sorted[i]) < at(sorted[j]) })
	c := cumulative{times: make([]int64, len(sorted)), sums: make([]uint64, len(sorted)+1)}
	for i, op := range sorted {
		c.times[i] = at(op)
		c.sums[i+1] = c.sums[i] + allocated(op)
	}
	return c
}

// before sums the allocations at times < t.
func (c cumulative) before(t int64) uint64 {
	return c.sums[sort.Search(len(c.times), func(i int) bool { return c.times[i] >= t })]
}

// atOrBefore sums the allocations at times <= t.
func (c cumulative) atOrBefore(t int64) uint64 {
	return c.sums[sort.Search(len(c.times), func(i int) bool { return c.times[i] > t })]
}
