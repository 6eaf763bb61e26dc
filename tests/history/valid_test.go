package history

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckerPassesValidHistories(t *testing.T) {
	cases := []struct {
		name  string
		start map[string]uint64
		run   func(s *script)
	}{
		{
			name: "a read concurrent with a put sees the old or the new value",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(1))
				w := s.r.Invoke(0, Put{"k", "b"})
				r1 := s.r.Invoke(1, Get{"k"})
				r2 := s.r.Invoke(2, Get{"k"})
				r1.Ok(found("b", 2))
				r2.Ok(found("a", 1))
				w.Ok(applied(2))
				s.ok(1, Get{"k"}, found("b", 2))
			},
		},
		{
			name: "an uncertain put that took effect",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(0))
				s.r.Invoke(0, Put{"k", "b"}).Info(errTimeout)
				s.ok(1, Get{"k"}, found("a", 0))
				s.ok(1, Get{"k"}, found("b", 0))
				s.ok(1, Get{"k"}, found("b", 0))
			},
		},
		{
			name: "an uncertain put that did not take effect",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(0))
				s.r.Invoke(0, Put{"k", "b"}).Info(errTimeout)
				s.ok(1, Get{"k"}, found("a", 0))
				s.ok(1, Get{"k"}, found("a", 0))
			},
		},
		{
			name: "an uncertain delete and a pending put",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(0))
				s.r.Invoke(0, Delete{"k"}).Info(errTimeout)
				s.ok(1, Get{"k"}, found("a", 0))
				s.ok(1, Get{"k"}, GetResult{})
				s.r.Invoke(2, Put{"k", "c"})
				s.ok(1, Get{"k"}, GetResult{})
			},
		},
		{
			name: "a failed put is never seen",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(0))
				s.r.Invoke(0, Put{"k", "b"}).Fail(errors.New("refused"))
				s.ok(1, Get{"k"}, found("a", 0))
			},
		},
		{
			name: "conditional writes with reported versions",
			run: func(s *script) {
				s.ok(0, PutIfAbsent{"k", "a"}, applied(1<<24))
				s.ok(0, PutIfAbsent{"k", "x"}, WriteResult{})
				s.ok(0, PutIfVersion{"k", "b", 1 << 24}, applied(2<<24))
				s.ok(1, PutIfVersion{"k", "c", 1 << 24}, WriteResult{})
				s.ok(1, Get{"k"}, found("b", 2<<24))
				s.ok(1, Delete{"k"}, applied(3<<24))
				s.ok(1, Delete{"k"}, WriteResult{})
				s.ok(1, Delete{"k"}, WriteResult{Applied: true})
				s.ok(0, PutIfVersion{"k", "d", 2 << 24}, WriteResult{})
				s.ok(0, PutIfAbsent{"k", "e"}, applied(4<<24))
				s.ok(1, Get{"k"}, found("e", 4<<24))
			},
		},
		{
			name: "an uncertain put-if-version on an unknown version",
			run: func(s *script) {
				s.ok(0, Put{"k", "a"}, applied(0))
				s.r.Invoke(0, PutIfVersion{"k", "b", 7}).Info(errTimeout)
				s.ok(1, Get{"k"}, found("b", 9))
				s.ok(1, PutIfVersion{"k", "c", 9}, applied(12))
				s.ok(2, Get{"k"}, found("c", 12))
			},
		},
		{
			name: "lists with concurrent and uncertain writes",
			run: func(s *script) {
				s.ok(0, Put{"d/1", "a"}, applied(0))
				s.ok(0, Put{"d/2", "b"}, applied(0))
				s.ok(0, Put{"d/3", "c"}, applied(0))
				s.r.Invoke(0, Delete{"d/3"}).Info(errTimeout)
				w := s.r.Invoke(1, Put{"d/4", "x"})
				d := s.r.Invoke(2, Delete{"d/2"})
				s.ok(3, List{"d/"}, ListResult{Entries: []Entry{{"d/1", "a"}, {"d/4", "x"}}})
				w.Ok(applied(0))
				d.Ok(applied(0))
				s.ok(3, List{"d/"}, ListResult{Entries: []Entry{{"d/1", "a"}, {"d/3", "c"}, {"d/4", "x"}}})
				s.ok(3, List{"e/"}, ListResult{})
			},
		},
		{
			name:  "allocations and reads, with uncertain and failed allocations",
			start: map[string]uint64{"c": 100, "other": 100},
			run: func(s *script) {
				s.ok(0, Allocate{"c", 10}, Allocation{Base: 100, Count: 10})
				a := s.r.Invoke(1, Allocate{"c", 5})
				s.r.Invoke(2, Allocate{"c", 20}).Info(errTimeout)
				s.r.Invoke(2, Allocate{"c", 20}).Fail(errors.New("refused"))
				s.ok(3, ReadCounter{"c"}, CounterValue{Next: 110})
				s.ok(3, ReadCounter{"c"}, CounterValue{Next: 135})
				a.Ok(Allocation{Base: 130, Count: 5})
				s.ok(3, ReadCounter{"c"}, CounterValue{Next: 135})
				s.ok(0, Allocate{"c", 1}, Allocation{Base: 135, Count: 1})
				s.ok(0, Allocate{"other", 1}, Allocation{Base: 100, Count: 1})
			},
		},
		{
			name: "leases: renewals, release, expiry, an uncertain release",
			run: func(s *script) {
				s.ok(0, Acquire{"r", "A"}, grant("A", 1, 0, 10_000))
				s.ok(0, Renew{"r", "A", 1}, grant("A", 1, 8_000, 18_000))
				s.ok(0, Release{"r", "A", 1}, ReleaseResult{AtMs: 9_000})
				s.ok(1, Acquire{"r", "B"}, grant("B", 2, 9_000, 19_000))
				s.r.Invoke(1, Acquire{"r", "B"}).Fail(errors.New("held"))
				s.ok(2, Acquire{"r", "C"}, grant("C", 3, 19_000, 29_000))
				s.ok(2, Renew{"r", "C", 3}, grant("C", 3, 25_000, 35_000))
				s.r.Invoke(2, Release{"r", "C", 3}).Info(errTimeout)
				s.ok(1, Acquire{"r", "B"}, grant("B", 4, 26_000, 36_000))
				s.r.Invoke(0, Acquire{"r", "A"}).Info(errTimeout)
				s.ok(0, Acquire{"other", "A"}, grant("A", 1, 0, 50_000))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript()
			tc.run(s)
			rep := s.check(t, Options{VisualizationDir: t.TempDir(), CounterStart: tc.start})
			require.True(t, rep.Ok(), "%v", rep.Anomalies)
			require.Empty(t, rep.Visualization)
			require.Empty(t, rep.Undecided)
		})
	}
}
