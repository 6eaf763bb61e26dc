package shadow

import (
	"math"
	"time"
)

// bucketsPerOctave sets histogram resolution: quantiles are exact to within
// 2^(1/4), about 19%, which is plenty to compare two allocators' latency.
const (
	bucketsPerOctave = 4
	histogramBuckets = 64*bucketsPerOctave + 1
)

// histogram is a fixed-size log-bucket latency histogram: constant memory
// however long the run.
type histogram struct {
	counts   [histogramBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

func bucketOf(d time.Duration) int {
	if d <= 1 {
		return 0
	}
	return min(histogramBuckets-1, int(math.Log2(float64(d))*bucketsPerOctave)+1)
}

// upperBound is the largest duration bucket i holds.
func upperBound(i int) time.Duration {
	return time.Duration(math.Exp2(float64(i) / bucketsPerOctave))
}

func (h *histogram) record(d time.Duration) {
	d = max(d, 0)
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
	h.counts[bucketOf(d)]++
}

// quantile returns an upper estimate of the q-quantile, clamped to the
// observed range.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= max(rank, 1) {
			return min(max(upperBound(i), h.min), h.max)
		}
	}
	return h.max
}

// LatencySummary describes one side's latency distribution.
type LatencySummary struct {
	Count  uint64        `json:"count"`
	MinNS  time.Duration `json:"min_ns"`
	MeanNS time.Duration `json:"mean_ns"`
	P50NS  time.Duration `json:"p50_ns"`
	P90NS  time.Duration `json:"p90_ns"`
	P99NS  time.Duration `json:"p99_ns"`
	P999NS time.Duration `json:"p999_ns"`
	MaxNS  time.Duration `json:"max_ns"`
	// Buckets are the non-empty histogram buckets in increasing order, for
	// plotting the distribution (at most 257 entries).
	Buckets []LatencyBucket `json:"buckets,omitempty"`
}

// LatencyBucket is one histogram bucket: Count latencies above the previous
// bucket's bound and at most UpperNS (clamped to the observed maximum).
type LatencyBucket struct {
	UpperNS time.Duration `json:"upper_ns"`
	Count   uint64        `json:"count"`
}

func (h *histogram) summary() LatencySummary {
	s := LatencySummary{Count: h.n, MinNS: h.min, MaxNS: h.max}
	if h.n > 0 {
		s.MeanNS = h.sum / time.Duration(h.n)
		s.P50NS, s.P90NS = h.quantile(0.5), h.quantile(0.9)
		s.P99NS, s.P999NS = h.quantile(0.99), h.quantile(0.999)
	}
	for i, c := range h.counts {
		if c > 0 {
			s.Buckets = append(s.Buckets, LatencyBucket{UpperNS: min(upperBound(i), h.max), Count: c})
		}
	}
	return s
}
