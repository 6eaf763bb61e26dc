package torture

import (
	"github.com/s-chain/schain/tests/history"
)

// duplicate names a write whose earlier exchanges may have applied besides
// the one its outcome records: the op-th operation of client, and how many
// such exchanges (copies).
type duplicate struct {
	client, op, copies int
}

// withDuplicates records each duplicate's exchanges as operations of their
// own: the same input, invoked when the write was, with an unknown outcome
// (Info). The router sends a write again after a lost or uncertain answer,
// so one call of the client may apply more than once ("a retried Allocate
// may reserve a second block of ids", client.Router): each exchange that
// may have applied is an attempt, and the checkers must count it (a
// counter read may see the ids a lost first exchange reserved). An Info
// operation asserts nothing, so no anomaly can come from one.
func withDuplicates(h history.History, dups []duplicate) history.History {
	if len(dups) == 0 {
		return h
	}
	type key struct{ client, op int }
	want := make(map[key]int, len(dups))
	for _, d := range dups {
		want[key{d.client, d.op}] += d.copies
	}
	seen := map[int]int{}
	out := append(history.History(nil), h...)
	for _, op := range h {
		n := seen[op.Client]
		seen[op.Client]++
		for range want[key{op.Client, n}] {
			out = append(out, history.Operation{
				ID: len(out), Client: op.Client, Input: op.Input, Call: op.Call, Status: history.Unknown,
				Err: "an earlier exchange of a retried write, which may have applied too",
			})
		}
	}
	return out
}
