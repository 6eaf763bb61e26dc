package shadow

import (
	"fmt"
	"time"
)

// gate tracks the current clean window. Time comes only from observations.
type gate struct {
	cfg GateConfig

	windowStart    time.Time // zero until a clean observation opens a window
	windowLast     time.Time
	windowRequests uint64
	resets         uint64
	lastReset      *Finding
	violations     uint64
}

func (g *gate) extend(at time.Time) {
	if g.windowRequests == 0 {
		g.windowStart = at
	}
	g.windowRequests++
	g.windowLast = at
}

func (g *gate) reset(f Finding) {
	if f.Class == ClassSChainViolation {
		g.violations++
	}
	g.resets++
	g.lastReset = &f
	g.windowStart, g.windowLast, g.windowRequests = time.Time{}, time.Time{}, 0
}

// point is the window as of an observation at at.
func (g *gate) point(at time.Time) WindowPoint {
	p := WindowPoint{At: at, Requests: g.windowRequests, Resets: g.resets}
	if g.windowRequests > 0 {
		p.DurationNS = g.windowLast.Sub(g.windowStart)
	}
	return p
}

// Decision is the gate's verdict and the reasons behind it.
type Decision struct {
	Ready            bool          `json:"ready"`
	Reasons          []string      `json:"reasons"`
	WindowStart      time.Time     `json:"window_start"`
	WindowRequests   uint64        `json:"window_requests"`
	WindowDurationNS time.Duration `json:"window_duration_ns"`
	Resets           uint64        `json:"resets"`
	LastReset        *Finding      `json:"last_reset,omitempty"`
}

func (g *gate) decide() Decision {
	d := Decision{
		WindowStart: g.windowStart, WindowRequests: g.windowRequests,
		Resets: g.resets, LastReset: g.lastReset,
	}
	if g.windowRequests > 0 {
		d.WindowDurationNS = g.windowLast.Sub(g.windowStart)
	}
	if g.windowRequests < g.cfg.MinRequests {
		d.Reasons = append(d.Reasons, fmt.Sprintf("clean window has %d of %d requests", g.windowRequests, g.cfg.MinRequests))
	}
	if d.WindowDurationNS < g.cfg.MinDuration {
		d.Reasons = append(d.Reasons, fmt.Sprintf("clean window spans %v of %v", d.WindowDurationNS, g.cfg.MinDuration))
	}
	if g.cfg.BlockOnViolation && g.violations > 0 {
		d.Reasons = append(d.Reasons, fmt.Sprintf("%d S-Chain violations: cutover blocked", g.violations))
	}
	d.Ready = len(d.Reasons) == 0
	return d
}
