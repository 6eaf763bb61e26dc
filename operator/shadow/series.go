package shadow

import "time"

// windowSeriesLimit bounds the agreement-window series kept for plots.
const windowSeriesLimit = 512

// WindowPoint is the gate's clean window as of one observation.
type WindowPoint struct {
	At         time.Time     `json:"at"`
	Requests   uint64        `json:"requests"`
	DurationNS time.Duration `json:"duration_ns"`
	Resets     uint64        `json:"resets"`
}

// windowSeries keeps a down-sampled history of the clean window in bounded
// memory: every stride-th observation is kept, and when windowSeriesLimit
// points accumulate every other one is dropped and the stride doubles. The
// points thus stay evenly spaced in observation count however long the run.
// A reset between kept points shows as a drop of Requests and a step of
// Resets at the next kept point.
type windowSeries struct {
	points []WindowPoint
	stride uint64
	seen   uint64
	last   WindowPoint
}

func (s *windowSeries) record(p WindowPoint) {
	if s.stride == 0 {
		s.stride = 1
	}
	if s.seen%s.stride == 0 {
		s.points = append(s.points, p)
		if len(s.points) >= windowSeriesLimit {
			kept := s.points[:0]
			for i := 0; i < len(s.points); i += 2 {
				kept = append(kept, s.points[i])
			}
			s.points = kept
			s.stride *= 2
		}
	}
	s.seen++
	s.last = p
}

// snapshot returns the kept points and, if it was not kept, the latest.
func (s *windowSeries) snapshot() []WindowPoint {
	if s.seen == 0 {
		return nil
	}
	out := make([]WindowPoint, len(s.points), len(s.points)+1)
	copy(out, s.points)
	if (s.seen-1)%s.stride != 0 {
		out = append(out, s.last)
	}
	return out
}
