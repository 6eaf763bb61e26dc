package shadow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWindowSeriesIsBoundedAndEven(t *testing.T) {
	for _, n := range []int{1, 2, 511, 512, 513, 1000, 5000} {
		var s windowSeries
		for i := range n {
			s.record(WindowPoint{At: t0.Add(time.Duration(i) * time.Second), Requests: uint64(i)})
		}
		pts := s.snapshot()
		require.LessOrEqual(t, len(pts), windowSeriesLimit, "n=%d", n)
		require.Equal(t, uint64(0), pts[0].Requests, "first point kept, n=%d", n)
		require.Equal(t, uint64(n-1), pts[len(pts)-1].Requests, "latest point included, n=%d", n)
		if n >= windowSeriesLimit {
			require.GreaterOrEqual(t, len(pts), windowSeriesLimit/2, "n=%d", n)
		}
		// Kept points are evenly spaced in observation count, but for the
		// appended latest one.
		step := pts[1%len(pts)].Requests - pts[0].Requests
		for i := 1; i < len(pts)-1; i++ {
			require.Equal(t, step, pts[i].Requests-pts[i-1].Requests, "n=%d i=%d", n, i)
		}
	}
	var empty windowSeries
	require.Nil(t, empty.snapshot())
}

func TestReportWindowTracksResets(t *testing.T) {
	require := require.New(t)
	c := newTestComparator(t, testConfig())
	s := &stream{}
	c.Observe(s.ok("r", 10, 1, 1, 1))
	c.Observe(s.ok("r", 10, 11, 1, 11))
	o := s.ok("r", 10, 21, 1, 21)
	o.SChain = SChainSide{Missing: true}
	c.Observe(o)
	c.Observe(s.ok("r", 10, 31, 1, 31))
	w := c.Report().Window
	require.Len(w, 4)
	require.Equal([]uint64{1, 2, 0, 1}, []uint64{w[0].Requests, w[1].Requests, w[2].Requests, w[3].Requests})
	require.Equal([]uint64{0, 0, 1, 1}, []uint64{w[0].Resets, w[1].Resets, w[2].Resets, w[3].Resets})
	require.Equal(time.Second, w[1].DurationNS)
	require.Equal(o.At, w[2].At)
}
