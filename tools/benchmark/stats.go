package benchmark

import (
	"math"
	"slices"
	"time"
)

// Sample is one request as its client saw it. Times are offsets from the
// start of the phase that issued it, so samples of one phase compare
// without a wall clock.
type Sample struct {
	// Range indexes the phase's range keys.
	Range int
	// Start and End bound the request as the client measured it.
	Start, End time.Duration
	// First and Count are the ids received: [First, First+Count).
	First, Count uint64
	// Failed marks a request that returned an error (no ids).
	Failed bool
}

// Latency is how long the request took.
func (s Sample) Latency() time.Duration { return s.End - s.Start }

// Summary is the throughput and latency of a set of samples over a
// measured duration. Latency percentiles cover successful requests only:
// a failure's latency says how fast the system refuses, not how fast it
// allocates.
type Summary struct {
	Requests uint64 `json:"requests"`
	Failures uint64 `json:"failures"`
	IDs      uint64 `json:"ids"`
	// Seconds is the measured duration the rates divide by.
	Seconds   float64       `json:"seconds"`
	ReqPerSec float64       `json:"req_per_sec"`
	IDsPerSec float64       `json:"ids_per_sec"`
	P50       time.Duration `json:"p50_ns"`
	P95       time.Duration `json:"p95_ns"`
	P99       time.Duration `json:"p99_ns"`
	Max       time.Duration `json:"max_ns"`
}

// Summarize counts successful requests and ids of samples that ended within
// elapsed and computes latency percentiles (nearest rank).
func Summarize(samples []Sample, elapsed time.Duration) Summary {
	var s Summary
	lat := make([]time.Duration, 0, len(samples))
	for _, x := range samples {
		if x.End > elapsed {
			continue
		}
		if x.Failed {
			s.Failures++
			continue
		}
		s.Requests++
		s.IDs += x.Count
		lat = append(lat, x.Latency())
	}
	s.Seconds = elapsed.Seconds()
	if s.Seconds > 0 {
		s.ReqPerSec = float64(s.Requests) / s.Seconds
		s.IDsPerSec = float64(s.IDs) / s.Seconds
	}
	slices.Sort(lat)
	s.P50, s.P95, s.P99 = Percentile(lat, 0.50), Percentile(lat, 0.95), Percentile(lat, 0.99)
	if len(lat) > 0 {
		s.Max = lat[len(lat)-1]
	}
	return s
}

// Percentile returns the nearest-rank q-quantile of sorted (ascending): the
// smallest value with at least q of the values at or below it. It returns 0
// for no values; q is clamped to [0, 1].
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

// Median returns the median of xs (the mean of the middle two for an even
// count), 0 for none; xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
