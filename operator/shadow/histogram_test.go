package shadow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHistogramQuantiles(t *testing.T) {
	require := require.New(t)
	var h histogram
	require.Equal(LatencySummary{}, h.summary())
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	s := h.summary()
	require.Equal(uint64(1000), s.Count)
	require.Equal(time.Microsecond, s.MinNS)
	require.Equal(time.Millisecond, s.MaxNS)
	for _, tc := range []struct {
		got, exact time.Duration
	}{{s.P50NS, 500 * time.Microsecond}, {s.P90NS, 900 * time.Microsecond}, {s.P99NS, 990 * time.Microsecond}} {
		require.GreaterOrEqual(tc.got, tc.exact)
		require.LessOrEqual(float64(tc.got), float64(tc.exact)*1.2, "within one bucket")
	}
	var total uint64
	for i, b := range s.Buckets {
		total += b.Count
		require.LessOrEqual(b.UpperNS, s.MaxNS)
		if i > 0 {
			require.Greater(b.UpperNS, s.Buckets[i-1].UpperNS)
		}
	}
	require.Equal(s.Count, total)
	require.Equal(s.MaxNS, s.Buckets[len(s.Buckets)-1].UpperNS)
	h.record(-time.Second) // clock skew must not panic
	h.record(time.Duration(1 << 62))
	require.Equal(time.Duration(1<<62), h.summary().MaxNS)
}
