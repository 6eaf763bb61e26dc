package history

import (
	"fmt"
	"math"
	"strings"
)

// checkLists applies the list rule (see the package doc) to every list that
// answered.
func checkLists(h History) []Anomaly {
	var idx *keyIndex
	var out []Anomaly
	for _, op := range h {
		if _, ok := op.Input.(List); !ok || op.Status != Ok {
			continue
		}
		if idx == nil {
			i := indexKeys(h)
			idx = &i
		}
		out = append(out, idx.checkList(op)...)
	}
	return out
}

func (idx keyIndex) checkList(l Operation) []Anomaly {
	prefix := l.Input.(List).Prefix
	var out []Anomaly
	returned := make(map[string]bool)
	for _, e := range l.Result.(ListResult).Entries {
		returned[e.Key] = true
		if a, bad := idx.checkEntry(l, prefix, e); bad {
			out = append(out, a)
		}
	}
	for _, k := range idx.keys {
		if !strings.HasPrefix(k, prefix) || returned[k] {
			continue
		}
		if last, missing := idx.mustAppear(k, l); missing {
			out = append(out, Anomaly{Kind: LostWrite, Subject: prefix, Ops: append([]Operation{l}, last...),
				Detail: fmt.Sprintf("#%d omitted %q, whose last acknowledged writes completed before it was invoked", l.ID, k)})
		}
	}
	return out
}

// checkEntry: an entry must be under the prefix, written by a write invoked
// before the list completed, and not certainly replaced before the list was
// invoked.
func (idx keyIndex) checkEntry(l Operation, prefix string, e Entry) (Anomaly, bool) {
	a := Anomaly{Kind: NonLinearizable, Subject: prefix, Ops: []Operation{l}}
	obs := observation{found: true, value: e.Value}
	switch {
	case !strings.HasPrefix(e.Key, prefix):
		a.Detail = fmt.Sprintf("#%d returned %q, outside its prefix", l.ID, e.Key)
		return a, true
	case len(idx.sources(e.Key, obs, l.Return)) == 0:
		a.Detail = fmt.Sprintf("#%d returned %q = %q, which no write invoked before it completed wrote", l.ID, e.Key, e.Value)
		return a, true
	}
	o, stale := idx.staleWitness(e.Key, obs, l.Call, l.Return)
	if !stale {
		return Anomaly{}, false
	}
	a.Kind, a.Ops = StaleRead, []Operation{l, o}
	a.Detail = fmt.Sprintf("#%d returned %q = %q, replaced by #%d, which completed before the list was invoked", l.ID, e.Key, e.Value, o.ID)
	return a, true
}

// mustAppear reports whether key k must be in list l: every write of k
// invoked before l completed had completed before l was invoked, and its
// last writes (no acknowledged write of k follows them) are all puts. It
// returns those last writes.
func (idx keyIndex) mustAppear(k string, l Operation) ([]Operation, bool) {
	var ws []Operation
	for _, w := range idx.writes[k] {
		if w.Call > l.Return {
			break // by call time
		}
		if w.end() >= l.Call {
			return nil, false
		}
		ws = append(ws, w)
	}
	last := lastWrites(ws)
	if len(last) == 0 {
		return nil, false
	}
	for _, w := range last {
		if _, del := w.Input.(Delete); del {
			return nil, false
		}
	}
	return last, true
}

// lastWrites are the writes no other write of ws certainly follows: those
// that may end after the last of them is invoked.
func lastWrites(ws []Operation) []Operation {
	lastCall := int64(math.MinInt64)
	for _, w := range ws {
		lastCall = max(lastCall, w.Call)
	}
	var out []Operation
	for _, w := range ws {
		if w.end() >= lastCall {
			out = append(out, w)
		}
	}
	return out
}
