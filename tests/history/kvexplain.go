package history

import (
	"fmt"
	"math"
	"sort"
)

// keyIndex holds, per key, what the explanations and the list rule look at.
type keyIndex struct {
	// writes may have taken effect: acknowledged as applied, or open; by
	// call time, as acked.
	writes map[string][]Operation
	// acked were acknowledged as applied.
	acked map[string][]Operation
	// gets answered.
	gets map[string][]Operation
	// listed are the list operations that returned the key, with the value.
	listed map[string][]listing
	// keys are the written keys, in order.
	keys []string
}

type listing struct {
	op    Operation
	value string
}

// observation is what a read saw of one key.
type observation struct {
	found   bool
	value   string
	version uint64
}

func indexKeys(h History) keyIndex {
	idx := keyIndex{writes: map[string][]Operation{}, acked: map[string][]Operation{},
		gets: map[string][]Operation{}, listed: map[string][]listing{}}
	for _, op := range h {
		idx.add(op)
	}
	for k, ws := range idx.writes {
		idx.keys = append(idx.keys, k)
		byCall(ws)
		byCall(idx.acked[k])
	}
	sort.Strings(idx.keys)
	return idx
}

func byCall(ops []Operation) {
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
}

func (idx *keyIndex) add(op Operation) {
	k := kvKey(op.Input)
	switch {
	case isKVWrite(op.Input) && op.open():
		idx.writes[k] = append(idx.writes[k], op)
	case isKVWrite(op.Input) && op.Status == Ok && op.Result.(WriteResult).Applied:
		idx.writes[k] = append(idx.writes[k], op)
		idx.acked[k] = append(idx.acked[k], op)
	case op.Status != Ok:
	case isKVKeyed(op.Input):
		if _, ok := op.Input.(Get); ok {
			idx.gets[k] = append(idx.gets[k], op)
		}
	default:
		if _, ok := op.Input.(List); ok {
			for _, e := range op.Result.(ListResult).Entries {
				idx.listed[e.Key] = append(idx.listed[e.Key], listing{op: op, value: e.Value})
			}
		}
	}
}

// produces reports whether write w leaves the key as a read observed it.
func produces(w Operation, obs observation) bool {
	switch o := w.Input.(type) {
	case Delete:
		return !obs.found
	case Put:
		return obs.found && obs.value == o.Value
	case PutIfAbsent:
		return obs.found && obs.value == o.Value
	case PutIfVersion:
		return obs.found && obs.value == o.Value
	}
	return false
}

func getObservation(op Operation) observation {
	r := op.Result.(GetResult)
	return observation{found: r.Found, value: r.Value, version: r.Version}
}

// initial stands for the key's state before the history: absent, and
// before everything.
var initial = Operation{ID: -1, Input: Delete{}, Call: math.MinInt64, Return: math.MinInt64, Status: Ok}

// staleWitness finds an acknowledged write that completed before a read
// invoked at call and certainly replaced whatever the read saw; the read
// completed at ret. A read of what no write produced has no witness.
func (idx keyIndex) staleWitness(key string, obs observation, call, ret int64) (Operation, bool) {
	if o, ok := idx.newerVersion(key, obs, call); ok {
		return o, true
	}
	sources := idx.sources(key, obs, ret)
	if len(sources) == 0 {
		return Operation{}, false
	}
	var witness Operation
	for _, src := range sources {
		o, ok := idx.replaced(key, src, obs, call)
		if !ok {
			return Operation{}, false
		}
		witness = o
	}
	return witness, true
}

// newerVersion finds an acknowledged write with a reported version above
// the read's that completed before the read was invoked.
func (idx keyIndex) newerVersion(key string, obs observation, call int64) (Operation, bool) {
	if !obs.found || obs.version == 0 {
		return Operation{}, false
	}
	for _, o := range idx.acked[key] {
		if o.Result.(WriteResult).Version > obs.version && o.Return < call {
			return o, true
		}
	}
	return Operation{}, false
}

// sources are the writes (and the initial absence) that can have left
// what the read saw: invoked before the read completed.
func (idx keyIndex) sources(key string, obs observation, ret int64) []Operation {
	var out []Operation
	if !obs.found {
		out = append(out, initial)
	}
	for _, w := range idx.writes[key] {
		if w.Call <= ret && produces(w, obs) {
			out = append(out, w)
		}
	}
	return out
}

// replaced finds an acknowledged write that left something else than the
// read saw, invoked after src completed and completed before the read was
// invoked.
func (idx keyIndex) replaced(key string, src Operation, obs observation, call int64) (Operation, bool) {
	for _, o := range idx.acked[key] {
		if !produces(o, obs) && src.before(o) && o.Return < call {
			return o, true
		}
	}
	return Operation{}, false
}

// seen reports whether any read that completed after w was invoked saw
// what w left.
func (idx keyIndex) seen(key string, w Operation) bool {
	for _, g := range idx.gets[key] {
		if g.Return >= w.Call && produces(w, getObservation(g)) {
			return true
		}
	}
	for _, l := range idx.listed[key] {
		if l.op.Return >= w.Call && produces(w, observation{found: true, value: l.value}) {
			return true
		}
	}
	return false
}

// explainKey names why a key's history is not linearizable: its stale
// reads, and its lost writes (a replacing write nobody saw); failing both,
// the key is reported as non-linearizable with all its operations.
func explainKey(key string, idx keyIndex) []Anomaly {
	var out []Anomaly
	lost := make(map[int]*Anomaly)
	var lostOrder []int
	for _, g := range idx.gets[key] {
		o, ok := idx.staleWitness(key, getObservation(g), g.Call, g.Return)
		switch {
		case !ok:
		case idx.seen(key, o):
			out = append(out, Anomaly{Kind: StaleRead, Subject: key, Ops: []Operation{g, o},
				Detail: fmt.Sprintf("#%d read %v, replaced by #%d, which completed before the read was invoked", g.ID, g.Result, o.ID)})
		default:
			if lost[o.ID] == nil {
				lost[o.ID] = &Anomaly{Kind: LostWrite, Subject: key, Ops: []Operation{o},
					Detail: fmt.Sprintf("#%d was acknowledged and never read; reads invoked after it completed saw older values", o.ID)}
				lostOrder = append(lostOrder, o.ID)
			}
			lost[o.ID].Ops = append(lost[o.ID].Ops, g)
		}
	}
	sort.Ints(lostOrder)
	for _, id := range lostOrder {
		out = append(out, *lost[id])
	}
	if len(out) == 0 {
		out = append(out, Anomaly{Kind: NonLinearizable, Subject: key, Ops: idx.operations(key),
			Detail: "no order of the key's operations explains every answer"})
	}
	return out
}

// operations are the key's writes and answered reads, by ID.
func (idx keyIndex) operations(key string) []Operation {
	ops := append(append([]Operation(nil), idx.writes[key]...), idx.gets[key]...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	return ops
}
