package benchmark

import (
	"slices"
	"time"
)

// Stall is the longest time without a successful allocation in a window
// that starts at a kill.
type Stall struct {
	// Longest is the longest gap between consecutive successful
	// completions, counting from the last success before the kill (or the
	// kill itself) and up to the end of the measurement.
	Longest time.Duration `json:"longest_ns"`
	// Censored means the longest gap was still open when the measurement
	// ended (the range had not recovered): the true stall is at least
	// Longest. Only gaps of at least the threshold are marked.
	Censored bool `json:"censored"`
	// Successes counts successful completions after the kill.
	Successes int `json:"successes"`
	// Recovered is when the range allocated again, relative to the kill:
	// the success that ended its longest gap if that gap reached the
	// threshold (an answer already in flight at the kill is not a
	// recovery), else the first success after the kill; -1 if there was
	// none, or the longest gap was still open at the end.
	Recovered time.Duration `json:"recovered_ns"`
}

// Kept reports whether the stall stayed below threshold: the range "kept
// allocating" through the failure.
func (s Stall) Kept(threshold time.Duration) bool { return s.Longest < threshold }

// StallAfter measures the stall of one stream of successful completion
// times (any order) from kill to end; threshold decides Censored.
func StallAfter(done []time.Duration, kill, end, threshold time.Duration) Stall {
	sorted := slices.Clone(done)
	slices.Sort(sorted)
	st := Stall{Recovered: -1}
	prev := kill
	var first, longestEnd time.Duration
	for _, t := range sorted {
		if t > end {
			break
		}
		if t <= kill {
			prev = t
			continue
		}
		if st.Successes == 0 {
			first = t
		}
		st.Successes++
		if t-prev > st.Longest {
			st.Longest, longestEnd = t-prev, t
		}
		prev = t
	}
	if tail := end - prev; tail > st.Longest {
		st.Longest = tail
		st.Censored = tail >= threshold
	}
	switch {
	case st.Successes == 0 || st.Censored:
	case st.Longest >= threshold:
		st.Recovered = longestEnd - kill
	default:
		st.Recovered = first - kill
	}
	return st
}

// RangeStalls measures each range's stall from kill to end: samples are one
// phase's requests, ranges the number of range keys it used.
func RangeStalls(samples []Sample, ranges int, kill, end, threshold time.Duration) []Stall {
	done := make([][]time.Duration, ranges)
	for _, s := range samples {
		if !s.Failed && s.Range >= 0 && s.Range < ranges {
			done[s.Range] = append(done[s.Range], s.End)
		}
	}
	out := make([]Stall, ranges)
	for i := range out {
		out[i] = StallAfter(done[i], kill, end, threshold)
	}
	return out
}

// GlobalStall is the longest window, from kill to end, in which no range
// had a successful completion: the stall every client saw at once.
func GlobalStall(samples []Sample, kill, end, threshold time.Duration) Stall {
	done := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		if !s.Failed {
			done = append(done, s.End)
		}
	}
	return StallAfter(done, kill, end, threshold)
}

// StallThreshold is the stall below which a range counts as having kept
// allocating: twice the system's steady p99 latency, and at least floor,
// so that one slow request is not a stall.
func StallThreshold(steadyP99, floor time.Duration) time.Duration {
	return max(2*steadyP99, floor)
}
