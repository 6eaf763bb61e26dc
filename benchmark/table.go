package benchmark

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteTables renders the report as Markdown tables (so that a run's output
// pastes into the README as is): steady throughput and latency with the
// S-Chain/legacy ratios, then the failover results.
func WriteTables(w io.Writer, r *Report) error {
	var b strings.Builder
	s := r.Settings
	fmt.Fprintf(&b, "Steady load: %d ranges, %d clients, %d ids per request, %d rounds of %s per system, interleaved; req/s and ids/s are medians over rounds, latencies pooled over rounds.\n\n",
		s.Ranges, s.Clients, s.Count, s.Rounds, s.RoundDuration)
	ratios := r.SChainVsLegacy()
	names := r.schainNames()
	b.WriteString("| system | req/s | ids/s | p50 | p95 | p99 | failed | req/s per round |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s / system |", n)
	}
	b.WriteString("\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |" + strings.Repeat(" ---: |", len(names)) + "\n")
	for _, sys := range r.Systems {
		rounds := make([]string, len(sys.Rounds))
		for i, rd := range sys.Rounds {
			rounds[i] = Thousands(rd.ReqPerSec)
		}
		st := sys.Steady
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d | %s |", sys.Name,
			Thousands(sys.MedianReqPerSec), Thousands(sys.MedianIDsPerSec),
			Duration(st.P50), Duration(st.P95), Duration(st.P99), st.Failures, strings.Join(rounds, ", "))
		for _, n := range names {
			ratio := "—"
			if x, ok := ratios[n][sys.Name]; ok {
				ratio = fmt.Sprintf("%.2fx", x)
			}
			fmt.Fprintf(&b, " %s |", ratio)
		}
		b.WriteString("\n")
	}
	if hasFailover(r) {
		fmt.Fprintf(&b, "\nFailover: one closed-loop client per range; kill -9 of one node %s after the phase starts. "+
			"A range kept allocating if its longest gap between successful allocations after the kill stayed below the threshold "+
			"(max(2 × steady p99, %s)); a gap still open at the end is censored (≥).\n\n", s.FailoverBefore, s.StallFloor)
		b.WriteString("| system | killed | measured after kill | threshold | ranges kept allocating | longest stall, victim's ranges | longest stall, other ranges | global stall | ids issued twice (whole run) |\n")
		b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, sys := range r.Systems {
			f := sys.Failover
			if f == nil {
				continue
			}
			others := "—"
			if f.victimRanges() < len(f.Ranges) {
				others = stallText(f.LongestOthers)
			}
			fmt.Fprintf(&b, "| %s | %s (owned %d/%d) | %s | %s | %d/%d (%.0f%%) | %s | %s | %s | %s |\n", sys.Name,
				f.Victim, f.victimRanges(), len(f.Ranges), Duration(f.End-f.KillAt), Duration(f.Threshold),
				f.Kept, len(f.Ranges), 100*f.KeptFraction(), stallText(f.LongestVictim), others, stallText(f.Global), duplicatesText(sys.Duplicates))
		}
	}
	writeFlaps(&b, r)
	writeFinality(&b, r)
	writeLiveness(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFlaps reports, per S-Chain system with a membership watcher, what
// the liveness rule did to the members during its steady rounds.
func writeFlaps(b *strings.Builder, r *Report) {
	first := true
	for _, sys := range r.Systems {
		if sys.Flaps == nil {
			continue
		}
		if first {
			b.WriteString("\nMembership during the steady rounds (every validator alive, under load): a validator leaving the members is a flap.\n\n")
			b.WriteString("| system | liveness rounds observed | membership changes | alive validators dropped | rounds nobody was live |\n| --- | ---: | ---: | ---: | ---: |\n")
			first = false
		}
		f := sys.Flaps
		fmt.Fprintf(b, "| %s | %d | %d | %d | %d |\n", sys.Name, f.Rounds, f.Changes, f.AliveOut, f.Fallbacks)
	}
}

// writeFinality reports, per S-Chain system, accept → certificate latency
// under its steady load against the interval between blocks.
func writeFinality(b *strings.Builder, r *Report) {
	first := true
	for _, sys := range r.Systems {
		f := sys.Finality
		if f == nil {
			continue
		}
		if first {
			b.WriteString("\nFinality during the steady rounds: accept → certificate on every node (the nodes' certificate_latency_seconds), against the mean interval between accepted blocks. Target: p50 ≤ 1 block interval.\n\n")
			b.WriteString("| system | blocks | block interval | accept → final p50 | p90 | p50 in block intervals |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
			first = false
		}
		if f.Counts.Count == 0 { // no block of its rounds got a certificate
			fmt.Fprintf(b, "| %s | %d | %s | none | none | — |\n", sys.Name, f.Blocks, Duration(f.BlockInterval))
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %.2f |\n", sys.Name, f.Blocks, Duration(f.BlockInterval), Duration(f.P50), Duration(f.P90), f.P50PerBlock)
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
		fmt.Fprintf(b, "\n%s against %s, its baseline (the same write path on a network without the feature), in the same run: %s vs %s req/s (medians of the rounds): %.2fx; p50 %s vs %s",
			sys.Name, base.Name, Thousands(sys.MedianReqPerSec), Thousands(base.MedianReqPerSec), sys.MedianReqPerSec/base.MedianReqPerSec, Duration(sys.Steady.P50), Duration(base.Steady.P50))
		if sys.CPU != nil && base.CPU != nil && base.CPU.PerRequest() > 0 {
			fmt.Fprintf(b, "; CPU per request %s vs %s: %s",
				cpuText(sys.CPU.PerRequest()), cpuText(base.CPU.PerRequest()), change(sys.CPU.PerRequest(), base.CPU.PerRequest()))
			if base.CPU.PerBlock() > 0 && sys.CPU.PerBlock() > 0 {
				fmt.Fprintf(b, "; per block %s vs %s: %s",
					cpuText(sys.CPU.PerBlock()), cpuText(base.CPU.PerBlock()), change(sys.CPU.PerBlock(), base.CPU.PerBlock()))
			}
			if base.CPU.PerDecision() > 0 && sys.CPU.PerDecision() > 0 {
				fmt.Fprintf(b, "; a block from issue to acceptance %s vs %s",
					Duration(sys.CPU.PerDecision()), Duration(base.CPU.PerDecision()))
			}
		}
		b.WriteString(".\n")
	}
	writeCPU(b, r)
}

// writeCPU reports, per system with a CPU source, what its processes
// spent during its steady rounds.
func writeCPU(b *strings.Builder, r *Report) {
	first := true
	for _, sys := range r.Systems {
		u := sys.CPU
		if u == nil {
			continue
		}
		if first {
			b.WriteString("\nCPU during the steady rounds: user and system time of the system's processes (S-Chain: every node and its plugin), over the requests answered in those rounds. On a shared machine this moves less than req/s. Issue → accept is the mean time the first node's blocks spent in consensus (avalanchego's blks_accepted), from issue to acceptance. Requests per transaction: how many requests one owner's signature carried, each transaction verified once by every other validator.\n\n")
			b.WriteString("| system | cores busy | CPU per request | requests | CPU per block | blocks | requests per block | requests per transaction | issue → accept |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
			first = false
		}
		perBlock, reqPerBlock, reqPerTx, decision := "—", "—", "—", "—"
		if u.Blocks > 0 {
			perBlock, reqPerBlock = cpuText(u.PerBlock()), fmt.Sprintf("%.1f", float64(u.Requests)/float64(u.Blocks))
		}
		if u.Txs > 0 {
			reqPerTx = fmt.Sprintf("%.1f", float64(u.Requests)/float64(u.Txs))
		}
		if u.Decided > 0 {
			decision = Duration(u.PerDecision())
		}
		fmt.Fprintf(b, "| %s | %.2f | %s | %d | %s | %d | %s | %s | %s |\n", sys.Name, u.Cores(), cpuText(u.PerRequest()), u.Requests, perBlock, u.Blocks, reqPerBlock, reqPerTx, decision)
	}
}

// change is how much x exceeds base, in percent.
func change(x, base time.Duration) string {
	return fmt.Sprintf("%+.0f%%", 100*(float64(x)/float64(base)-1))
}

// cpuText prints a CPU time per request in milliseconds with two decimals
// (microseconds matter at pooled rates).
func cpuText(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// writeLiveness reports the failover per liveness round setting.
func writeLiveness(b *strings.Builder, r *Report) {
	if len(r.Liveness) == 0 {
		return
	}
	b.WriteString("\nFailover per liveness round setting (one network each; \"main\" is the network of the steady rounds): kill -9 of the validator owning the most ranges. " +
		"Bound: (K+1) rounds + the heartbeat lead, the longest a dead validator stays a member while every round has a block (rounds without one do not count); its ranges allocate again once the first block of the next round is accepted and their new owner's transaction after it. " +
		"Flaps under load: alive validators dropped from the members before the kill; after the kill, anybody but the victim dropped, or the victim back.\n\n")
	b.WriteString("| round | K | bound | network | write path | victim's ranges allocate again after the kill: median, slowest | longest stall, other ranges | global stall | flaps under load (rounds) | flaps after the kill | ids issued twice |\n")
	b.WriteString("| ---: | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
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
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s, %s | %s | %s | %s | %s | %s |\n",
			Duration(rs.Round), rs.K, Duration(rs.Bound), rs.Network, sys.Name, Duration(median.Longest), stallText(slowest),
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
