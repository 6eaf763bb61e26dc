package history

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// kvState is one key in the model. Exact false: the key's version is
// unknown but strictly greater than Version (an uncertain or unreported
// write moved it).
type kvState struct {
	Live    bool
	Value   string
	Version uint64
	Exact   bool
}

// kvOutput is an operation's answer as the model sees it; Known false: an
// uncertain write, which the model may apply or not.
type kvOutput struct {
	Known bool
	Get   GetResult
	Write WriteResult
}

// kvModel is the per-key sequential specification; porcupine partitions
// the history by key.
func kvModel() porcupine.Model {
	m := porcupine.NondeterministicModel{
		Partition: partitionByKey,
		Init:      func() []interface{} { return []interface{}{kvState{Exact: true}} },
		Step: func(state, input, output interface{}) []interface{} {
			return kvStep(state.(kvState), input.(Input), output.(kvOutput))
		},
		DescribeOperation: describeKV,
		DescribeState:     describeState,
		DescribeOperationMetadata: func(info interface{}) string {
			if info == nil {
				return ""
			}
			return fmt.Sprint(info)
		},
	}
	return m.ToModel()
}

// partitionByKey groups operations by key, in key order.
func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := make(map[string][]porcupine.Operation)
	for _, op := range ops {
		k := kvKey(op.Input.(Input))
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// kvKey is the key of a single-key operation ("" for others).
func kvKey(in Input) string {
	switch o := in.(type) {
	case Get:
		return o.Key
	case Put:
		return o.Key
	case PutIfAbsent:
		return o.Key
	case PutIfVersion:
		return o.Key
	case Delete:
		return o.Key
	}
	return ""
}

// isKVWrite reports whether in writes one key.
func isKVWrite(in Input) bool {
	switch in.(type) {
	case Put, PutIfAbsent, PutIfVersion, Delete:
		return true
	}
	return false
}

func kvStep(s kvState, in Input, out kvOutput) []interface{} {
	if _, ok := in.(Get); ok {
		return stepGet(s, out.Get)
	}
	var next []interface{}
	for _, holds := range conditionHolds(s, in) {
		if !answerFits(in, out, holds) {
			continue
		}
		if !holds {
			next = append(next, s)
			continue
		}
		if n, ok := applyWrite(s, in, out); ok {
			next = append(next, n)
		}
	}
	return next
}

// answerFits reports whether a write's answer fits whether its condition
// held. A delete of an absent key changes nothing whatever it answers (the
// store answers it with version 0).
func answerFits(in Input, out kvOutput, holds bool) bool {
	if _, del := in.(Delete); del && !holds {
		return true
	}
	return !out.Known || out.Write.Applied == holds
}

// stepGet: the answer must be the key's state; a reported version pins an
// unknown one.
func stepGet(s kvState, r GetResult) []interface{} {
	if !r.Found {
		if s.Live {
			return nil
		}
		return []interface{}{s}
	}
	if !s.Live || s.Value != r.Value || !versionFits(s, r.Version) {
		return nil
	}
	if r.Version != 0 {
		s.Version, s.Exact = r.Version, true
	}
	return []interface{}{s}
}

// versionFits reports whether a reported version v can be the current one.
func versionFits(s kvState, v uint64) bool {
	switch {
	case v == 0:
		return true
	case s.Exact:
		return s.Version == v
	}
	return v > s.Version
}

// conditionHolds lists whether a write's condition can hold in s: one
// answer, or both when the version is unknown.
func conditionHolds(s kvState, in Input) []bool {
	switch o := in.(type) {
	case Put:
		return []bool{true}
	case PutIfAbsent:
		return []bool{!s.Live}
	case Delete:
		return []bool{s.Live}
	case PutIfVersion:
		switch {
		case !s.Live:
			return []bool{false}
		case s.Exact:
			return []bool{s.Version == o.Version}
		case o.Version > s.Version:
			return []bool{true, false}
		}
		return []bool{false}
	}
	return nil
}

// applyWrite is the state after a write that took effect: its new version
// above the last one, exact if reported.
func applyWrite(s kvState, in Input, out kvOutput) (kvState, bool) {
	n := kvState{Version: s.Version}
	switch o := in.(type) {
	case Put:
		n.Live, n.Value = true, o.Value
	case PutIfAbsent:
		n.Live, n.Value = true, o.Value
	case PutIfVersion:
		n.Live, n.Value = true, o.Value
		if n.Version < o.Version {
			n.Version = o.Version // the condition held: the version was o.Version
		}
	}
	v := uint64(0)
	if out.Known {
		v = out.Write.Version
	}
	if v == 0 {
		return n, true
	}
	if v <= n.Version {
		return kvState{}, false
	}
	n.Version, n.Exact = v, true
	return n, true
}

func describeKV(input, output interface{}) string {
	out := output.(kvOutput)
	switch {
	case !out.Known:
		return fmt.Sprintf("%v -> unknown", input)
	case isKVWrite(input.(Input)):
		return fmt.Sprintf("%v -> %v", input, out.Write)
	}
	return fmt.Sprintf("%v -> %v", input, out.Get)
}

func describeState(state interface{}) string {
	s := state.(kvState)
	version := fmt.Sprintf("v%d", s.Version)
	if !s.Exact {
		version = fmt.Sprintf("v>%d", s.Version)
	}
	if !s.Live {
		return "absent " + version
	}
	return fmt.Sprintf("%q %s", s.Value, version)
}
