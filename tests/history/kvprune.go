package history

// unobservable returns the IDs of uncertain puts porcupine need not see. An
// uncertain put w on key k is left out when no read ever returned its value
// at k and every operation on k that can take effect after w was invoked is
// a get, a put, or a delete answered as not applied. Such a w changes no
// verdict: placed last, it fits any linearization of the rest; and in any
// linearization with it, no get sees it and the next write that follows it
// is a put, which leaves the same state with or without it. Leaving them
// out keeps the search small: an uncertain operation never returns, so it
// is concurrent with everything after it.
func unobservable(h History) map[int]bool {
	idx := indexKeys(h)
	others := opsByKey(h)
	out := make(map[int]bool)
	for _, k := range idx.keys {
		for _, w := range idx.writes[k] {
			if w.open() && isPut(w.Input) && !idx.valueSeen(k, w) && onlyPutsAfter(others[k], w) {
				out[w.ID] = true
			}
		}
	}
	return out
}

// opsByKey groups the single-key operations that did not certainly fail.
func opsByKey(h History) map[string][]Operation {
	out := make(map[string][]Operation)
	for _, op := range h {
		if isKVKeyed(op.Input) && op.Status != Failed {
			out[kvKey(op.Input)] = append(out[kvKey(op.Input)], op)
		}
	}
	return out
}

// isPut reports whether in writes a value (unconditionally or not).
func isPut(in Input) bool {
	switch in.(type) {
	case Put, PutIfAbsent, PutIfVersion:
		return true
	}
	return false
}

// valueSeen reports whether any read of key returned w's value.
func (idx keyIndex) valueSeen(key string, w Operation) bool {
	value := writtenValue(w.Input)
	for _, g := range idx.gets[key] {
		if r := g.Result.(GetResult); r.Found && r.Value == value {
			return true
		}
	}
	for _, l := range idx.listed[key] {
		if l.value == value {
			return true
		}
	}
	return false
}

func writtenValue(in Input) string {
	switch o := in.(type) {
	case Put:
		return o.Value
	case PutIfAbsent:
		return o.Value
	case PutIfVersion:
		return o.Value
	}
	return ""
}

// onlyPutsAfter reports whether every operation of ops other than w that
// can take effect after w was invoked is a get, a put or a delete that was
// not applied.
func onlyPutsAfter(ops []Operation, w Operation) bool {
	for _, o := range ops {
		if o.ID == w.ID || o.end() < w.Call {
			continue
		}
		switch o.Input.(type) {
		case Get, Put:
		case Delete:
			if o.Status != Ok || o.Result.(WriteResult).Applied {
				return false
			}
		default:
			return false
		}
	}
	return true
}
