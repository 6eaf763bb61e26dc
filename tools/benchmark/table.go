package benchmark

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteTables renders the report as Markdown: steady throughput and
// latency with the S-Chain/legacy ratios, then the failover results.
func WriteTables(w io.Writer, r *Report) error {
	var m Markdown
	writeSteady(&m, r)
	writeFailover(&m, r)
	writeFlaps(&m, r)
	writeFinality(&m, r)
	writeLiveness(&m, r)
	_, err := m.WriteTo(w)
	return err
}

// writeSteady reports each system's steady rounds, with a column of ratios
// per S-Chain system.
func writeSteady(m *Markdown, r *Report) {
	s := r.Settings
	m.Para("Steady load: %d ranges, %d clients, %d ids per request, %d rounds of %s per system, interleaved; req/s and ids/s are medians over rounds, latencies pooled over rounds.",
		s.Ranges, s.Clients, s.Count, s.Rounds, s.RoundDuration)
	ratios := r.SChainVsLegacy()
	names := r.schainNames()
	cols := []Col{Text("system"), Num("req/s"), Num("ids/s"), Num("p50"), Num("p95"), Num("p99"), Num("failed"), Text("req/s per round")}
	for _, n := range names {
		cols = append(cols, Num(n+" / system"))
	}
	m.Table(cols...)
	for _, sys := range r.Systems {
		rounds := make([]string, len(sys.Rounds))
		for i, rd := range sys.Rounds {
			rounds[i] = Thousands(rd.ReqPerSec)
		}
		st := sys.Steady
		row := []any{sys.Name, Thousands(sys.MedianReqPerSec), Thousands(sys.MedianIDsPerSec),
			Duration(st.P50), Duration(st.P95), Duration(st.P99), st.Failures, strings.Join(rounds, ", ")}
		for _, n := range names {
			ratio := "—"
			if x, ok := ratios[n][sys.Name]; ok {
				ratio = fmt.Sprintf("%.2fx", x)
			}
			row = append(row, ratio)
		}
		m.Row(row...)
	}
}

// writeFailover reports each system's failover phase.
func writeFailover(m *Markdown, r *Report) {
	if !hasFailover(r) {
		return
	}
	s := r.Settings
	m.Para("Failover: one closed-loop client per range; kill -9 of one node %s after the phase starts. "+
		"A range kept allocating if its longest gap between successful allocations after the kill stayed below the threshold "+
		"(max(2 × steady p99, %s)); a gap still open at the end is censored (≥).", s.FailoverBefore, s.StallFloor)
	m.Table(Text("system"), Text("killed"), Num("measured after kill"), Num("threshold"), Num("ranges kept allocating"),
		Num("longest stall, victim's ranges"), Num("longest stall, other ranges"), Num("global stall"), Num("ids issued twice (whole run)"))
	for _, sys := range r.Systems {
		f := sys.Failover
		if f == nil {
			continue
		}
		others := "—"
		if f.victimRanges() < len(f.Ranges) {
			others = stallText(f.LongestOthers)
		}
		m.Row(sys.Name, fmt.Sprintf("%s (owned %d/%d)", f.Victim, f.victimRanges(), len(f.Ranges)), Duration(f.End-f.KillAt), Duration(f.Threshold),
			fmt.Sprintf("%d/%d (%.0f%%)", f.Kept, len(f.Ranges), 100*f.KeptFraction()), stallText(f.LongestVictim), others, stallText(f.Global), duplicatesText(sys.Duplicates))
	}
}

// writeFlaps reports, per S-Chain system with a membership watcher, what
// the liveness rule did to the members during its steady rounds.
func writeFlaps(m *Markdown, r *Report) {
	first := true
	for _, sys := range r.Systems {
		if sys.Flaps == nil {
			continue
		}
		if first {
			m.Para("Membership during the steady rounds (every validator alive, under load): a validator leaving the members is a flap.")
			m.Table(Text("system"), Num("liveness rounds observed"), Num("membership changes"), Num("alive validators dropped"), Num("rounds nobody was live"))
			first = false
		}
		f := sys.Flaps
		m.Row(sys.Name, f.Rounds, f.Changes, f.AliveOut, f.Fallbacks)
	}
}

// writeFinality reports, per S-Chain system, accept → certificate latency
// under its steady load against the interval between blocks.
func writeFinality(m *Markdown, r *Report) {
	first := true
	for _, sys := range r.Systems {
		f := sys.Finality
		if f == nil {
			continue
		}
		if first {
			m.Para("Finality during the steady rounds: accept → certificate on every node (the nodes' certificate_latency_seconds), against the mean interval between accepted blocks. Target: p50 ≤ 1 block interval.")
			m.Table(Text("system"), Num("blocks"), Num("block interval"), Num("accept → final p50"), Num("p90"), Num("p50 in block intervals"))
			first = false
		}
		if f.Counts.Count == 0 { // no block of its rounds got a certificate
			m.Row(sys.Name, f.Blocks, Duration(f.BlockInterval), "none", "none", "—")
			continue
		}
		m.Row(sys.Name, f.Blocks, Duration(f.BlockInterval), Duration(f.P50), Duration(f.P90), fmt.Sprintf("%.2f", f.P50PerBlock))
	}
	for _, base := range r.Systems {
		if base.BaselineOf == "" {
			continue
		}
		i := slices.IndexFunc(r.Systems, func(s SystemReport) bool { return s.Name == base.BaselineOf })
		if i < 0 || base.MedianReqPerSec == 0 {
			continue
		}
		sys := r.Systems[i]
		m.Line("\n%s against %s, its baseline (the same write path on a network without the feature), in the same run: %s vs %s req/s (medians of the rounds): %.2fx; p50 %s vs %s",
			sys.Name, base.Name, Thousands(sys.MedianReqPerSec), Thousands(base.MedianReqPerSec), sys.MedianReqPerSec/base.MedianReqPerSec, Duration(sys.Steady.P50), Duration(base.Steady.P50))
		if sys.CPU != nil && base.CPU != nil && base.CPU.PerRequest() > 0 {
			m.Line("; CPU per request %s vs %s: %s",
				CPUText(sys.CPU.PerRequest()), CPUText(base.CPU.PerRequest()), change(sys.CPU.PerRequest(), base.CPU.PerRequest()))
			if base.CPU.PerBlock() > 0 && sys.CPU.PerBlock() > 0 {
				m.Line("; per block %s vs %s: %s",
					CPUText(sys.CPU.PerBlock()), CPUText(base.CPU.PerBlock()), change(sys.CPU.PerBlock(), base.CPU.PerBlock()))
			}
			if base.CPU.PerDecision() > 0 && sys.CPU.PerDecision() > 0 {
				m.Line("; a block from issue to acceptance %s vs %s",
					Duration(sys.CPU.PerDecision()), Duration(base.CPU.PerDecision()))
			}
		}
		m.Line(".\n")
	}
	writeCPU(m, r)
}

// writeCPU reports, per system with a CPU source, what its processes
// spent during its steady rounds.
func writeCPU(m *Markdown, r *Report) {
	first := true
	for _, sys := range r.Systems {
		u := sys.CPU
		if u == nil {
			continue
		}
		if first {
			m.Para("CPU during the steady rounds: user and system time of the system's processes (S-Chain: every node and its plugin), over the requests answered in those rounds. On a shared machine this moves less than req/s. Issue → accept is the mean time the first node's blocks spent in consensus (avalanchego's blks_accepted), from issue to acceptance. Requests per transaction: how many requests one owner's signature carried, each transaction verified once by every other validator.")
			m.Table(Text("system"), Num("cores busy"), Num("CPU per request"), Num("requests"), Num("CPU per block"), Num("blocks"),
				Num("requests per block"), Num("requests per transaction"), Num("issue → accept"))
			first = false
		}
		perBlock, reqPerBlock, reqPerTx, decision := "—", "—", "—", "—"
		if u.Blocks > 0 {
			perBlock, reqPerBlock = CPUText(u.PerBlock()), fmt.Sprintf("%.1f", float64(u.Requests)/float64(u.Blocks))
		}
		if u.Txs > 0 {
			reqPerTx = fmt.Sprintf("%.1f", float64(u.Requests)/float64(u.Txs))
		}
		if u.Decided > 0 {
			decision = Duration(u.PerDecision())
		}
		m.Row(sys.Name, fmt.Sprintf("%.2f", u.Cores()), CPUText(u.PerRequest()), u.Requests, perBlock, u.Blocks, reqPerBlock, reqPerTx, decision)
	}
}

// change is how much x exceeds base, in percent.
func change(x, base time.Duration) string {
	return fmt.Sprintf("%+.0f%%", 100*(float64(x)/float64(base)-1))
}

// CPUText prints a CPU time per request in milliseconds with two decimals
// (microseconds matter at pooled rates).
func CPUText(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// writeLiveness reports the failover per liveness round setting.
func writeLiveness(m *Markdown, r *Report) {
	if len(r.Liveness) == 0 {
		return
	}
	m.Para("Failover per liveness round setting (one network each; \"main\" is the network of the steady rounds): kill -9 of the validator owning the most ranges. " +
		"Bound: (K+1) rounds + the heartbeat lead, the longest a dead validator stays a member while every round has a block (rounds without one do not count); its ranges allocate again once the first block of the next round is accepted and their new owner's transaction after it. " +
		"Flaps under load: alive validators dropped from the members before the kill; after the kill, anybody but the victim dropped, or the victim back.")
	m.Table(Num("round"), Num("K"), Num("bound"), Text("network"), Text("write path"), Num("victim's ranges allocate again after the kill: median, slowest"),
		Num("longest stall, other ranges"), Num("global stall"), Num("flaps under load (rounds)"), Num("flaps after the kill"), Num("ids issued twice"))
	for _, rs := range r.Liveness {
		sys := rs.System
		f := sys.Failover
		if f == nil {
			continue
		}
		median, slowest := rs.Recovery()
		flaps, after := "—", "—"
		if sys.Flaps != nil {
			flaps = fmt.Sprintf("%d (%d)", sys.Flaps.AliveOut, sys.Flaps.Rounds)
		}
		if f.Flaps != nil {
			after = fmt.Sprintf("%d", f.Flaps.AliveOut+f.Flaps.DeadBack)
		}
		others := "—"
		if f.victimRanges() < len(f.Ranges) {
			others = stallText(f.LongestOthers)
		}
		m.Row(Duration(rs.Round), rs.K, Duration(rs.Bound), rs.Network, sys.Name, Duration(median.Longest)+", "+stallText(slowest),
			others, stallText(f.Global), flaps, after, duplicatesText(sys.Duplicates))
	}
}

func hasFailover(r *Report) bool {
	for _, s := range r.Systems {
		if s.Failover != nil {
			return true
		}
	}
	return false
}

func (f *FailoverReport) victimRanges() int {
	n := 0
	for _, r := range f.Ranges {
		if r.Owner == f.Victim {
			n++
		}
	}
	return n
}

func stallText(s Stall) string {
	if s.Censored {
		return "≥ " + Duration(s.Longest) + " (not recovered)"
	}
	return Duration(s.Longest)
}

func duplicatesText(d Duplicates) string {
	if d.Overlapping == 0 {
		return fmt.Sprintf("0 of %s allocations", Thousands(float64(d.Allocations)))
	}
	return fmt.Sprintf("%s ids in %s allocations", Thousands(float64(d.IDs)), Thousands(float64(d.Overlapping)))
}

// Thousands formats x rounded to an integer with comma separators
// (12345.6 → "12,346").
func Thousands(x float64) string {
	neg := x < 0
	if neg {
		x = -x
	}
	digits := strconv.FormatFloat(x, 'f', 0, 64)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Duration formats d with three significant figures in a fitting unit
// (850µs, 4.2ms, 1.25s, 100s).
func Duration(d time.Duration) string {
	var v float64
	var unit string
	switch {
	case d >= time.Second:
		v, unit = d.Seconds(), "s"
	case d >= time.Millisecond:
		v, unit = float64(d)/float64(time.Millisecond), "ms"
	default:
		v, unit = float64(d)/float64(time.Microsecond), "µs"
	}
	prec := 0
	switch {
	case v < 10:
		prec = 2
	case v < 100:
		prec = 1
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + unit
}

// Met says whether a target was reached, for the tables.
func Met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
