package history

import (
	"fmt"
	"sort"
	"strings"
)

// Kind names an anomaly.
type Kind string

// The anomalies the checkers report.
const (
	// StaleRead: a read (a get, or an entry of a list) returned a value
	// that an acknowledged write had replaced before the read was invoked.
	StaleRead Kind = "stale read"
	// LostWrite: an acknowledged write no read ever saw, while reads after
	// it saw older values; or a list that omitted a key whose last writes
	// were acknowledged puts that completed before it.
	LostWrite Kind = "lost write"
	// NonLinearizable: a key's history has no linearization, and no stale
	// read or lost write explains it; or a list returned an entry no write
	// produced.
	NonLinearizable Kind = "non-linearizable"
	// DoubleGrant: two grants of one range held at once.
	DoubleGrant Kind = "double grant"
	// TokenNotIncreasing: a new grant's fencing token is not above every
	// token granted before it on the range.
	TokenNotIncreasing Kind = "fencing token not increasing"
	// ReissuedID: two acknowledged allocations of a counter overlap.
	ReissuedID Kind = "reissued id"
	// CounterOutOfBounds: a counter read below what was acknowledged before
	// it or above what was attempted before it completed.
	CounterOutOfBounds Kind = "counter read out of bounds"
)

// Anomaly is one broken promise with the operations that show it.
type Anomaly struct {
	Kind Kind
	// Subject is the key, list prefix, counter or range.
	Subject string
	Detail  string
	Ops     []Operation
}

func (a Anomaly) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %q: %s", a.Kind, a.Subject, a.Detail)
	for _, op := range a.Ops {
		fmt.Fprintf(&b, "\n\t%v", op)
	}
	return b.String()
}

// Report is what Check found.
type Report struct {
	// Operations is how many operations the history holds.
	Operations int
	// Anomalies, ordered by kind, subject and first operation.
	Anomalies []Anomaly
	// Undecided are the keys porcupine did not decide within the timeout.
	Undecided []string
	// Visualization is the HTML file of the non-linearizable keys'
	// history ("" if none was written).
	Visualization string
}

// Ok reports whether the history broke no promise.
func (r Report) Ok() bool { return len(r.Anomalies) == 0 }

// Count is how many anomalies of kind k the report holds.
func (r Report) Count(k Kind) int {
	n := 0
	for _, a := range r.Anomalies {
		if a.Kind == k {
			n++
		}
	}
	return n
}

// ByKind counts the anomalies by kind.
func (r Report) ByKind() map[Kind]int {
	out := make(map[Kind]int)
	for _, a := range r.Anomalies {
		out[a.Kind]++
	}
	return out
}

// String summarises the report: operations, anomalies by kind in kind
// order, undecided keys and the visualisation.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations checked, %d anomalies", r.Operations, len(r.Anomalies))
	counts := r.ByKind()
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "; %s: %d", k, counts[Kind(k)])
	}
	if len(r.Undecided) > 0 {
		fmt.Fprintf(&b, "; undecided keys: %q", r.Undecided)
	}
	if r.Visualization != "" {
		fmt.Fprintf(&b, "; visualisation: %s", r.Visualization)
	}
	return b.String()
}

func sortAnomalies(as []Anomaly) {
	sort.SliceStable(as, func(i, j int) bool {
		a, b := as[i], as[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Subject != b.Subject {
			return a.Subject < b.Subject
		}
		return firstID(a) < firstID(b)
	})
}

func firstID(a Anomaly) int {
	if len(a.Ops) == 0 {
		return -1
	}
	return a.Ops[0].ID
}
