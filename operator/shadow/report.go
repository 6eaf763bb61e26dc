package shadow

import "time"

// Report is the comparator's state as evidence: JSON-serialisable and
// bounded in size (examples are capped per kind).
type Report struct {
	Decision Decision                `json:"decision"`
	Requests uint64                  `json:"requests"`
	Agreed   uint64                  `json:"agreed"`
	Counts   map[Kind]uint64         `json:"counts"`
	ByClass  map[Class]uint64        `json:"by_class"`
	Examples map[Kind][]Finding      `json:"examples"`
	Latency  map[Side]LatencySummary `json:"latency"`
	Tracking TrackingSummary         `json:"tracking"`
	FirstAt  time.Time               `json:"first_at"`
	LastAt   time.Time               `json:"last_at"`
	// Window is the clean window over observation time, down-sampled to at
	// most 512 points (evenly spaced in observation count, the latest
	// always included).
	Window []WindowPoint `json:"window,omitempty"`
	// Run is filled by Runner; nil for a bare comparator.
	Run *RunStats `json:"run,omitempty"`
}

// TrackingSummary shows how much memory tracking uses and whether bounds
// cost fidelity.
type TrackingSummary struct {
	Ranges          int    `json:"ranges"`
	Intervals       int    `json:"intervals"`
	CoarsenedRanges int    `json:"coarsened_ranges"`
	UntrackedObs    uint64 `json:"untracked_observations"`
	LegacyMaxID     uint64 `json:"legacy_max_id"`
}

// Report returns a snapshot of the evidence and the gate decision.
func (c *Comparator) Report() Report {
	r := Report{
		Decision: c.gate.decide(),
		Requests: c.requests, Agreed: c.agreed,
		Counts:   make(map[Kind]uint64, len(c.counts)),
		ByClass:  make(map[Class]uint64),
		Examples: make(map[Kind][]Finding, len(c.examples)),
		Latency: map[Side]LatencySummary{
			SideLegacy: c.legacyLatency.summary(),
			SideSChain: c.schainLatency.summary(),
		},
		FirstAt: c.firstAt, LastAt: c.lastAt,
		Window: c.window.snapshot(),
	}
	for k, n := range c.counts {
		r.Counts[k] = n
		r.ByClass[k.Class()] += n
	}
	for k, ex := range c.examples {
		r.Examples[k] = append([]Finding(nil), ex...)
	}
	r.Tracking = TrackingSummary{Ranges: len(c.ranges), UntrackedObs: c.untracked, LegacyMaxID: c.legacyMax}
	if c.sharedLegacy != nil {
		r.Tracking.Intervals += c.sharedLegacy.len()
	}
	for _, rs := range c.ranges {
		r.Tracking.Intervals += rs.legacy.len() + rs.schain.len()
		if rs.truncation {
			r.Tracking.CoarsenedRanges++
		}
	}
	return r
}

// Ready reports the gate decision alone, without building a report.
func (c *Comparator) Ready() bool { return c.gate.decide().Ready }
