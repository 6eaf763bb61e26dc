package history

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckerLeavesOutOnlyUnobservableUncertainPuts(t *testing.T) {
	s := newScript()
	s.ok(0, Put{"k", "a"}, applied(0))
	s.r.Invoke(1, Put{"k", "never read"}).Info(errTimeout) // 1: left out
	s.r.Invoke(1, Put{"k", "read"}).Info(errTimeout)       // 2: its value is read
	s.ok(0, Put{"k", "b"}, applied(0))                     // 3
	s.ok(2, Get{"k"}, found("read", 0))                    // 4
	s.ok(2, Delete{"k"}, WriteResult{})                    // 5: not applied... after a live read
	s.r.Invoke(1, Put{"j", "x"}).Info(errTimeout)          // 6: a conditional write follows
	s.ok(0, PutIfVersion{"j", "y", 3}, WriteResult{})      // 7
	s.r.Invoke(1, PutIfAbsent{"i", "x"}).Info(errTimeout)  // 8: an applied delete follows
	s.ok(0, Delete{"i"}, WriteResult{Applied: true})       // 9
	s.r.Invoke(1, Put{"h", "x"}).Info(errTimeout)          // 10: only gets and puts follow
	s.ok(0, Get{"h"}, GetResult{})                         // 11
	s.ok(0, Put{"h", "y"}, applied(0))                     // 12
	require.Equal(t, map[int]bool{1: true, 10: true}, unobservable(s.r.History()))

	rep := s.check(t, Options{})
	require.Equal(t, map[Kind]int{NonLinearizable: 1}, kinds(rep), "the delete of a live key was not applied")
	require.Equal(t, "k", rep.Anomalies[0].Subject)
}
