package history

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

var errTimeout = errors.New("timeout")

func TestCheckerReportsAnomalies(t *testing.T) {
	cases := []struct {
		name string
		run  func(s *script)
		want map[Kind]int
		// ops are the IDs the first anomaly names, in order.
		ops []int
	}{
		{
			name: "stale read after an overwrite that was read",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(1))
				s.ok(0, Put{"k", "b"}, applied(2))
				s.ok(1, Get{"k"}, found("b", 2))
				s.ok(2, Get{"k"}, found("a", 0))
			},
			want: map[Kind]int{StaleRead: 1},
			ops:  []int{3, 1},
		},
		{
			name: "stale read by version",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(1))
				s.ok(0, Put{"k", "a"}, applied(2))
				s.ok(1, Get{"k"}, found("a", 1))
			},
			want: map[Kind]int{StaleRead: 1},
			ops:  []int{2, 1},
		},
		{
			name: "stale read of a deleted key",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(0))
				s.ok(0, Delete{"k"}, applied(0))
				s.ok(1, Get{"k"}, GetResult{})
				s.ok(2, Get{"k"}, found("a", 0))
			},
			want: map[Kind]int{StaleRead: 1},
			ops:  []int{3, 1},
		},
		{
			name: "lost write: acknowledged, never read, later reads see the older value",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(0))
				s.ok(0, Put{"k", "b"}, applied(0))
				s.ok(1, Get{"k"}, found("a", 0))
				s.ok(2, Get{"k"}, found("a", 0))
			},
			want: map[Kind]int{LostWrite: 1},
			ops:  []int{1, 2, 3},
		},
		{
			name: "lost delete",
			run: func(s *script) {
				s.ok(0, PutIfAbsent{"k", "a"}, applied(0))
				s.ok(0, Delete{"k"}, applied(0))
				s.ok(1, Get{"k"}, found("a", 0))
			},
			want: map[Kind]int{LostWrite: 1},
			ops:  []int{1, 2},
		},
		{
			name: "two put-if-absent both applied",
			run: func(s *script) {
				a := s.r.Invoke(0, PutIfAbsent{"k", "a"})
				b := s.r.Invoke(1, PutIfAbsent{"k", "b"})
				a.Ok(applied(0))
				b.Ok(applied(0))
			},
			want: map[Kind]int{NonLinearizable: 1},
			ops:  []int{0, 1},
		},
		{
			name: "read of a value nobody wrote",
			run: func(s *script) {
				s.ok(0, Get{"k"}, found("ghost", 0))
			},
			want: map[Kind]int{NonLinearizable: 1},
			ops:  []int{0},
		},
		{
			name: "put-if-version applied at a version the key never had",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(5))
				s.ok(0, PutIfVersion{"k", "b", 4}, applied(6))
			},
			want: map[Kind]int{NonLinearizable: 1},
		},
		{
			name: "list returns a deleted entry",
			run: func(s *script) {
				s.ok(0, Put{"d/1", "a"}, applied(0))
				s.ok(0, Delete{"d/1"}, applied(0))
				s.ok(1, List{"d/"}, ListResult{Entries: []Entry{{"d/1", "a"}}})
			},
			want: map[Kind]int{StaleRead: 1},
			ops:  []int{2, 1},
		},
		{
			name: "list omits an acknowledged entry",
			run: func(s *script) {
				s.ok(0, Put{"d/1", "a"}, applied(0))
				s.ok(0, Put{"d/2", "b"}, applied(0))
				s.ok(1, List{"d/"}, ListResult{Entries: []Entry{{"d/2", "b"}}})
			},
			want: map[Kind]int{LostWrite: 1},
			ops:  []int{2, 0},
		},
		{
			name: "list returns an entry nobody wrote or outside its prefix",
			run: func(s *script) {
				s.ok(0, Put{"e/1", "a"}, applied(0))
				s.ok(1, List{"d/"}, ListResult{Entries: []Entry{{"d/9", "x"}, {"e/1", "a"}}})
			},
			want: map[Kind]int{NonLinearizable: 2},
		},
		{
			name: "double grant",
			run: func(s *script) {
				s.ok(0, Acquire{"r", "A"}, grant("A", 1, 0, 10_000))
				s.ok(1, Acquire{"r", "B"}, grant("B", 2, 5_000, 15_000))
			},
			want: map[Kind]int{DoubleGrant: 1},
			ops:  []int{0, 1},
		},
		{
			name: "double grant against a renewal",
			run: func(s *script) {
				s.ok(0, Acquire{"r", "A"}, grant("A", 1, 0, 10_000))
				s.ok(0, Renew{"r", "A", 1}, grant("A", 1, 8_000, 18_000))
				s.ok(1, Acquire{"r", "B"}, grant("B", 2, 12_000, 22_000))
			},
			want: map[Kind]int{DoubleGrant: 1},
			ops:  []int{1, 2},
		},
		{
			name: "one token granted to two holders",
			run: func(s *script) {
				s.ok(0, Acquire{"r", "A"}, grant("A", 1, 0, 10_000))
				s.ok(1, Renew{"r", "B", 1}, grant("B", 1, 2_000, 12_000))
			},
			want: map[Kind]int{DoubleGrant: 1},
			ops:  []int{0, 1},
		},
		{
			name: "fencing token goes back",
			run: func(s *script) {
				s.ok(0, Acquire{"r", "A"}, grant("A", 5, 0, 10_000))
				s.ok(0, Release{"r", "A", 5}, ReleaseResult{AtMs: 1_000})
				s.ok(1, Acquire{"r", "B"}, grant("B", 3, 2_000, 12_000))
			},
			want: map[Kind]int{TokenNotIncreasing: 1},
			ops:  []int{0, 2},
		},
		{
			name: "reissued id",
			run: func(s *script) {
				s.ok(0, Allocate{"c", 10}, Allocation{Base: 0, Count: 10})
				s.ok(1, Allocate{"c", 10}, Allocation{Base: 10, Count: 10})
				s.ok(2, Allocate{"c", 10}, Allocation{Base: 15, Count: 10})
			},
			want: map[Kind]int{ReissuedID: 1},
			ops:  []int{1, 2},
		},
		{
			name: "reissued id inside a wider allocation",
			run: func(s *script) {
				s.ok(0, Allocate{"c", 100}, Allocation{Base: 0, Count: 100})
				s.ok(1, Allocate{"c", 10}, Allocation{Base: 100, Count: 10})
				s.ok(2, Allocate{"c", 10}, Allocation{Base: 50, Count: 10})
			},
			want: map[Kind]int{ReissuedID: 1},
			ops:  []int{0, 2},
		},
		{
			name: "counter read below what was acknowledged",
			run: func(s *script) {
				s.ok(0, Allocate{"c", 10}, Allocation{Base: 0, Count: 10})
				s.ok(1, ReadCounter{"c"}, CounterValue{Next: 5})
			},
			want: map[Kind]int{CounterOutOfBounds: 1},
			ops:  []int{1},
		},
		{
			name: "counter read above what was attempted",
			run: func(s *script) {
				s.ok(0, Allocate{"c", 10}, Allocation{Base: 0, Count: 10})
				s.r.Invoke(1, Allocate{"c", 10}).Info(errTimeout)
				s.r.Invoke(2, Allocate{"c", 10}).Fail(errors.New("refused"))
				s.ok(3, ReadCounter{"c"}, CounterValue{Next: 21})
			},
			want: map[Kind]int{CounterOutOfBounds: 1},
			ops:  []int{3},
		},
		{
			name: "every kind at once",
			run: func(s *script) {
				s.ok(0, Put{"s", "a"}, applied(0))
				s.ok(0, Put{"s", "b"}, applied(0))
				s.ok(1, Get{"s"}, found("b", 0))
				s.ok(1, Get{"s"}, found("a", 0))
				s.ok(0, Put{"l", "a"}, applied(0))
				s.ok(0, Put{"l", "b"}, applied(0))
				s.ok(1, Get{"l"}, found("a", 0))
				s.ok(0, Acquire{"r", "A"}, grant("A", 1, 0, 10_000))
				s.ok(1, Acquire{"r", "B"}, grant("B", 2, 5_000, 15_000))
				s.ok(0, Allocate{"c", 10}, Allocation{Base: 0, Count: 10})
				s.ok(1, Allocate{"c", 10}, Allocation{Base: 5, Count: 10})
				s.ok(2, ReadCounter{"c"}, CounterValue{Next: 40})
			},
			want: map[Kind]int{StaleRead: 1, LostWrite: 1, DoubleGrant: 1, ReissuedID: 1, CounterOutOfBounds: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript()
			tc.run(s)
			rep := s.check(t, Options{})
			require.Equal(t, tc.want, kinds(rep), "%v", rep.Anomalies)
			require.False(t, rep.Ok())
			require.Equal(t, len(s.r.History()), rep.Operations)
			if tc.ops != nil {
				var ids []int
				for _, op := range rep.Anomalies[0].Ops {
					ids = append(ids, op.ID)
				}
				require.Equal(t, tc.ops, ids, "%v", rep.Anomalies[0])
			}
		})
	}
}
