package torture

import (
	"testing"

	"github.com/s-chain/schain/tests/history"
)

// A counter read that sees the ids a lost first exchange of a retried
// allocation reserved is within bounds once that exchange is recorded, and
// out of bounds without it.
func TestDuplicatesCountAsAttempts(t *testing.T) {
	var now int64
	rec := history.NewRecorder(func() int64 { now++; return now })
	a := rec.Invoke(0, history.Allocate{Counter: "c", Count: 4})
	// The first exchange reserved [0, 4) and its answer was lost; the
	// retry reserved [4, 8).
	a.Ok(history.Allocation{Base: 4, Count: 4})
	r := rec.Invoke(1, history.ReadCounter{Counter: "c"})
	r.Ok(history.CounterValue{Next: 8})
	h := rec.History()

	rep, err := history.Check(h, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(history.CounterOutOfBounds) != 1 {
		t.Fatalf("without the duplicate: %v, want one counter read out of bounds", rep)
	}
	withDup := withDuplicates(h, []duplicate{{client: 0, op: 0, copies: 1}})
	if len(withDup) != len(h)+1 || withDup[len(h)].Status != history.Unknown || withDup[len(h)].Call != h[0].Call {
		t.Fatalf("duplicate not recorded as an Info operation invoked with the write: %v", withDup)
	}
	rep, err = history.Check(withDup, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Ok() {
		t.Errorf("with the duplicate: %v", rep)
	}
}
