package benchmark

import (
	"slices"
	"time"
)

// Report is everything one bench run measured; it is written as JSON.
type Report struct {
	Started  time.Time     `json:"started"`
	WallTime time.Duration `json:"wall_time_ns"`
	Machine  Machine       `json:"machine"`
	Settings Settings      `json:"settings"`
	// Order is the steady schedule that ran (indexes into Systems).
	Order   []Slot         `json:"order"`
	Systems []SystemReport `json:"systems"`
	// Liveness is the S-Chain failover per liveness round setting, one
	// network each (empty when not measured).
	Liveness []RoundSetting `json:"liveness,omitempty"`
}

// RoundSetting is one S-Chain network run with one liveness rule: flapping
// under load with every validator alive, then a kill -9 of the owner of
// the most ranges.
type RoundSetting struct {
	// Round and K are the genesis's roundDurationMs and livenessRounds.
	Round time.Duration `json:"round_ns"`
	K     uint64        `json:"liveness_rounds"`
	// Bound is how long a dead validator stays a member at most by the
	// rule: (K+1) rounds plus the heartbeat lead.
	Bound time.Duration `json:"bound_ns"`
	// Network says where it ran: "main" is the network of the steady rounds.
	Network string `json:"network"`
	// System is the write path measured (its steady load, flaps, failover
	// and duplicates).
	System SystemReport `json:"system"`
}

// Recovery is how long after the kill the victim's ranges allocated again:
// the median and the slowest of them (the slowest is censored, as a
// stall, when some range never recovered).
func (r RoundSetting) Recovery() (median, slowest Stall) {
	f := r.System.Failover
	if f == nil {
		return Stall{}, Stall{}
	}
	var rec []time.Duration
	for _, rf := range f.Ranges {
		if rf.Owner != f.Victim {
			continue
		}
		if rf.Stall.Recovered < 0 {
			return Stall{}, Stall{Longest: f.End - f.KillAt, Censored: true}
		}
		rec = append(rec, rf.Stall.Recovered)
	}
	if len(rec) == 0 {
		return Stall{}, Stall{}
	}
	slices.Sort(rec)
	return Stall{Longest: rec[len(rec)/2]}, Stall{Longest: rec[len(rec)-1]}
}

// Machine describes where the run happened, since every figure depends on it.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	MemoryMB uint64 `json:"memory_mb"`
	GoOS     string `json:"goos"`
	GoArch   string `json:"goarch"`
	Go       string `json:"go"`
}

// SystemReport is one system's results.
type SystemReport struct {
	Name           string `json:"name"`
	SChain         bool   `json:"schain"`
	SharedKeySpace bool   `json:"shared_key_space"`
	// Rounds are the steady rounds in the order they ran.
	Rounds []Summary `json:"rounds"`
	// Steady pools every steady round's samples (rates over their total time).
	Steady Summary `json:"steady"`
	// MedianReqPerSec and MedianIDsPerSec are medians over the rounds: the
	// headline rates, robust to one disturbed round.
	MedianReqPerSec float64 `json:"median_req_per_sec"`
	MedianIDsPerSec float64 `json:"median_ids_per_sec"`
	// Windows are the wall-clock times of its steady rounds, in order.
	Windows []Window `json:"windows,omitempty"`
	// Flaps is what the liveness rule did to the members during the steady
	// rounds (S-Chain, with a membership watcher; nil otherwise).
	Flaps *Flaps `json:"flaps,omitempty"`
	// Failover is nil when the failover phase did not run.
	Failover *FailoverReport `json:"failover,omitempty"`
	// Finality is accept → certificate latency during the steady rounds
	// (S-Chain with a finality source; nil otherwise).
	Finality *Finality `json:"finality,omitempty"`
	// CPU is what the system's processes spent during the steady rounds
	// (targets with a CPU source; nil otherwise).
	CPU *CPUUse `json:"cpu,omitempty"`
	// BaselineOf names the system this one is the baseline of (Target.Baseline).
	BaselineOf string `json:"baseline_of,omitempty"`
	// Duplicates checks every allocation of the run, steady and failover.
	Duplicates Duplicates `json:"duplicates"`
}

// FailoverReport is one system's kill -9 phase.
type FailoverReport struct {
	// Victim names the killed node.
	Victim string `json:"victim"`
	// KillAt and End are offsets from the phase start; KilledAt and EndedAt
	// the same times by the wall clock.
	KillAt   time.Duration `json:"kill_at_ns"`
	End      time.Duration `json:"end_ns"`
	KilledAt time.Time     `json:"killed_at"`
	EndedAt  time.Time     `json:"ended_at"`
	// Flaps is what the liveness rule did to the members after the kill
	// (S-Chain, with a membership watcher; nil otherwise): the victim
	// should leave once and stay out, nobody else should leave.
	Flaps *Flaps `json:"flaps,omitempty"`
	// Threshold is the stall below which a range kept allocating.
	Threshold time.Duration `json:"threshold_ns"`
	// Ranges has one entry per range key, in key order.
	Ranges []RangeFailover `json:"ranges"`
	// Kept counts ranges whose stall stayed below Threshold.
	Kept int `json:"kept"`
	// Longest is the worst range stall; LongestVictim and LongestOthers
	// split it by whether the range was served by the victim (a range of a
	// live node should not notice the kill at all).
	Longest       Stall `json:"longest"`
	LongestVictim Stall `json:"longest_victim"`
	LongestOthers Stall `json:"longest_others"`
	// Global is the longest window with no success in any range.
	Global Stall `json:"global"`
	// Load summarises the whole phase (before and after the kill).
	Load Summary `json:"load"`
}

// RangeFailover is one range during the failover phase.
type RangeFailover struct {
	Range string `json:"range"`
	// Owner served the range when the node was killed.
	Owner string `json:"owner"`
	Stall Stall  `json:"stall"`
	Kept  bool   `json:"kept"`
}

// KeptFraction is the fraction of ranges that kept allocating.
func (f *FailoverReport) KeptFraction() float64 {
	if len(f.Ranges) == 0 {
		return 0
	}
	return float64(f.Kept) / float64(len(f.Ranges))
}

// NewFailoverReport measures a failover phase: samples over ranges (with
// their owners at the kill), victim killed at kill, measured until end.
func NewFailoverReport(victim string, ranges, owners []string, samples []Sample, kill, end, threshold time.Duration) *FailoverReport {
	f := &FailoverReport{Victim: victim, KillAt: kill, End: end, Threshold: threshold, Load: Summarize(samples, end)}
	for i, st := range RangeStalls(samples, len(ranges), kill, end, threshold) {
		rf := RangeFailover{Range: ranges[i], Stall: st, Kept: st.Kept(threshold)}
		if i < len(owners) {
			rf.Owner = owners[i]
		}
		if rf.Kept {
			f.Kept++
		}
		f.Longest = longer(f.Longest, st)
		if rf.Owner == victim {
			f.LongestVictim = longer(f.LongestVictim, st)
		} else {
			f.LongestOthers = longer(f.LongestOthers, st)
		}
		f.Ranges = append(f.Ranges, rf)
	}
	f.Global = GlobalStall(samples, kill, end, threshold)
	return f
}

// longer returns the longer stall (a, if equal).
func longer(a, b Stall) Stall {
	if b.Longest > a.Longest {
		return b
	}
	return a
}

// SChainVsLegacy returns each S-Chain system's median req/s over each
// legacy system's, by S-Chain name then legacy name; empty without an
// S-Chain system.
func (r *Report) SChainVsLegacy() map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, s := range r.Systems {
		if !s.SChain {
			continue
		}
		out[s.Name] = map[string]float64{}
		for _, l := range r.Systems {
			if !l.SChain && l.MedianReqPerSec > 0 {
				out[s.Name][l.Name] = s.MedianReqPerSec / l.MedianReqPerSec
			}
		}
	}
	return out
}

// schainNames lists the S-Chain systems in report order.
func (r *Report) schainNames() []string {
	var out []string
	for _, s := range r.Systems {
		if s.SChain {
			out = append(out, s.Name)
		}
	}
	return out
}
