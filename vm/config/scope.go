package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// GuardedSegments are the range segments a wildcard never stands for: a
// SeaweedFS prefix's cutover floors (<prefix>/floor/keys,
// <prefix>/floor/volumes), its volume ids (<prefix>/volumes) and the key
// bands its masters reserve file keys from (<prefix>/keys/<band>,
// schainseq.KeyRange). One allocation with a huge floor on one of them
// stops a cluster for good (counters only go up: no master can reserve
// volume ids or keys in that band again), and one on a floor passes the
// cutover guard without a cutover, so only a token that names them may
// write them: "prod-eu1/volumes", "prod-eu1/keys/*", "prod-eu1/floor/*".
var GuardedSegments = []string{"floor", "keys", "volumes"}

// EveryMethod in a token's methods allows every write method, future ones
// included.
const EveryMethod = "*"

// maxPatterns bounds a token's ranges and methods.
const maxPatterns = 256

// Scope is what a write token may do: call its methods on the ranges its
// patterns cover (a manifest's range is its bucket). Patterns are
// "/"-separated segments, each a literal or "*": a "*" stands for one
// segment, or, last, for one or more; it never stands for a guarded
// segment unless the pattern names one above it. A token written before scopes (no ranges, no methods) is
// unscoped: every method, every range, guarded ones included.
type Scope struct {
	unscoped bool
	ranges   [][]string // patterns split into segments
	methods  []string
}

// Scope is the token's scope.
func (t WriteToken) Scope() Scope {
	if t.Unscoped() {
		return Scope{unscoped: true}
	}
	s := Scope{methods: t.Methods}
	for _, p := range t.Ranges {
		s.ranges = append(s.ranges, strings.Split(p, "/"))
	}
	return s
}

// Unscoped reports a token written before scopes: it names neither ranges
// nor methods.
func (t WriteToken) Unscoped() bool { return t.Ranges == nil && t.Methods == nil }

// Unscoped reports a token that may do everything.
func (s Scope) Unscoped() bool { return s.unscoped }

// Allows reports whether the scope may call method (its JSON-RPC name,
// "allocate").
func (s Scope) Allows(method string) bool {
	return s.unscoped || slices.Contains(s.methods, method) || slices.Contains(s.methods, EveryMethod)
}

// Covers reports whether the scope may write rangeKey.
func (s Scope) Covers(rangeKey string) bool {
	if s.unscoped {
		return true
	}
	segs := strings.Split(rangeKey, "/")
	for _, p := range s.ranges {
		if matches(p, segs) {
			return true
		}
	}
	return false
}

// matches is one pattern against a range's segments. A "*" stands for a
// guarded segment only below one the pattern names: "a/floor/*" covers
// a/floor/volumes, "a/keys/*" covers a/keys/0, "a/*" covers none of them.
func matches(pattern, segs []string) bool {
	named := false
	for i, p := range pattern {
		last := i == len(pattern)-1
		switch {
		case i >= len(segs):
			return false
		case p != "*":
			if p != segs[i] {
				return false
			}
			named = named || guarded(p)
		case last:
			for _, s := range segs[i:] {
				if !named && guarded(s) {
					return false
				}
			}
			return true
		case !named && guarded(segs[i]):
			return false
		}
	}
	return len(pattern) == len(segs)
}

func guarded(seg string) bool { return slices.Contains(GuardedSegments, seg) }

var errBadScope = errors.New("bad scope")

// verifyScope checks a token's ranges and methods: both or neither, none
// empty, each pattern of whole segments.
func (t WriteToken) verifyScope() error {
	if t.Unscoped() {
		return nil
	}
	switch {
	case t.Ranges == nil || t.Methods == nil:
		return fmt.Errorf("%w: name both ranges and methods (or neither, for a token that may write everything)", errBadScope)
	case len(t.Ranges) == 0 || len(t.Methods) == 0:
		return fmt.Errorf("%w: empty ranges or methods: the token could write nothing (remove the entry instead)", errBadScope)
	case len(t.Ranges) > maxPatterns || len(t.Methods) > maxPatterns:
		return fmt.Errorf("%w: more than %d ranges or methods", errBadScope, maxPatterns)
	}
	for _, p := range t.Ranges {
		if err := verifyPattern(p); err != nil {
			return fmt.Errorf("%w: range pattern %q: %w", errBadScope, p, err)
		}
	}
	for _, m := range t.Methods {
		if err := verifyMethod(m); err != nil {
			return fmt.Errorf("%w: method %q: %w", errBadScope, m, err)
		}
	}
	return nil
}

// maxPatternLen bounds a pattern: ranges are at most 128 bytes.
const maxPatternLen = 256

func verifyPattern(p string) error {
	if len(p) == 0 || len(p) > maxPatternLen {
		return fmt.Errorf("%d bytes, must be 1..%d", len(p), maxPatternLen)
	}
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "":
			return errors.New(`an empty segment (a leading, trailing or doubled "/")`)
		case seg != "*" && strings.Contains(seg, "*"):
			return fmt.Errorf(`segment %q: a "*" stands for a whole segment`, seg)
		}
	}
	return nil
}

func verifyMethod(m string) error {
	if m == EveryMethod {
		return nil
	}
	if len(m) == 0 || len(m) > 64 {
		return fmt.Errorf("%d bytes, must be 1..64", len(m))
	}
	for i := 0; i < len(m); i++ {
		if c := m[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("byte 0x%02x at %d: a method is its JSON-RPC name (allocate, allocateBatch, putManifest)", c, i)
		}
	}
	return nil
}

// ParseList splits a comma-separated list of patterns or methods (a
// command line's), dropping spaces and empty items.
func ParseList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
