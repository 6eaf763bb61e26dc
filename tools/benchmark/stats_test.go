package benchmark

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// msec is n milliseconds.
func msec(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentileNearestRank(t *testing.T) {
	require := require.New(t)
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, msec(i))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, msec(1)}, {0.01, msec(1)}, {0.5, msec(50)}, {0.95, msec(95)}, {0.99, msec(99)}, {0.991, msec(100)}, {1, msec(100)}, {2, msec(100)}, {-1, msec(1)}} {
		require.Equal(c.want, Percentile(hundred, c.q), "q=%v", c.q)
	}
	require.Zero(Percentile(nil, 0.5))
	require.Equal(msec(7), Percentile([]time.Duration{msec(7)}, 0.99))
	// Ten values: p95 and p99 are both the largest (rank 10), p50 the 5th.
	ten := hundred[:10]
	require.Equal(msec(5), Percentile(ten, 0.5))
	require.Equal(msec(10), Percentile(ten, 0.95))
}

func TestSummarizeCountsOnlySuccesses(t *testing.T) {
	require := require.New(t)
	samples := []Sample{
		{Start: 0, End: msec(10), First: 0, Count: 4},
		{Start: msec(10), End: msec(40), First: 4, Count: 4},
		{Start: msec(5), End: msec(1995), Failed: true}, // slow failure: not in latency
		{Start: msec(40), End: msec(60), First: 8, Count: 2},
		{Start: msec(1990), End: msec(2100), First: 10, Count: 4}, // ended after the measured 2 s
	}
	s := Summarize(samples, 2*time.Second)
	require.Equal(uint64(3), s.Requests)
	require.Equal(uint64(1), s.Failures)
	require.Equal(uint64(10), s.IDs)
	require.InDelta(1.5, s.ReqPerSec, 1e-9)
	require.InDelta(5.0, s.IDsPerSec, 1e-9)
	require.Equal(msec(20), s.P50)
	require.Equal(msec(30), s.P99)
	require.Equal(msec(30), s.Max)

	empty := Summarize(nil, 0)
	require.Zero(empty.ReqPerSec)
	require.Zero(empty.P99)
}

func TestMedian(t *testing.T) {
	require := require.New(t)
	xs := []float64{5, 1, 3}
	require.InDelta(3.0, Median(xs), 0)
	require.Equal([]float64{5, 1, 3}, xs, "input untouched")
	require.InDelta(2.5, Median([]float64{4, 1, 2, 3}), 0)
	require.Zero(Median(nil))
}
