package weedbench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/s-chain/schain/benchmark"
)

// WriteTables writes the report as Markdown tables.
func WriteTables(w io.Writer, r *Report) error {
	var b strings.Builder
	s := r.Settings
	fmt.Fprintf(&b, "SeaweedFS assigns: %d closed-loop clients, /dir/assign count 1, %d rounds of %v per cluster, interleaved; assigns/s is the median over rounds, latencies pooled over rounds.\n\n",
		s.Clients, s.Rounds, s.RoundDuration)
	if s.MasterMilliCPUs > 0 {
		fmt.Fprintf(&b, "Every master limited to %d thousandths of a CPU (a cgroup each, GOMAXPROCS to match): masters as if each had a machine of its own.\n\n", s.MasterMilliCPUs)
	}
	b.WriteString("| cluster | assigns/s | p50 | p95 | p99 | failed | assigns/s per round | keys issued twice |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n")
	for _, st := range r.Systems {
		var rounds []string
		for _, rd := range st.Rounds {
			rounds = append(rounds, benchmark.Thousands(rd.ReqPerSec))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s | %d of %d |\n", st.Name, benchmark.Thousands(st.MedianReqPerSec),
			benchmark.Duration(st.Pooled.P50), benchmark.Duration(st.Pooled.P95), benchmark.Duration(st.Pooled.P99), st.Pooled.Failures,
			strings.Join(rounds, ", "), st.Duplicates.Overlapping, st.Duplicates.Allocations)
	}
	fmt.Fprintf(&b, "\nS-Chain sequencer / stock: throughput %.2fx (target >= 0.95x: %s), p99 %.2fx (target <= 1.2x: %s).\n",
		r.ThroughputRatio, benchmark.Met(r.ThroughputRatio >= 0.95), r.P99Ratio, benchmark.Met(r.P99Ratio > 0 && r.P99Ratio <= 1.2))
	if r.LeaderlessRatio > 0 {
		fmt.Fprintf(&b, "Leaderless masters (3, clients spread over them) / stock (1 leader): throughput %.2fx (target >= 1.5x: %s), p99 %.2fx.\n",
			r.LeaderlessRatio, benchmark.Met(r.LeaderlessRatio >= 1.5), r.LeaderlessP99Ratio)
	}

	fmt.Fprintf(&b, "\nLeader kill: %d clients upload (assign, then write at once) and %d only assign (keys held unwritten); kill -9 of the leader after %v, load for %v after it. Gap: longest time without any acknowledged upload.\n\n",
		s.Uploaders, s.Assigners, s.KillBefore, s.MasterKillAfter)
	b.WriteString("Keys issued twice: the same key on the same volume. Stock keys reissued: the stock sequencer's keys are global, so a key handed out twice on two volumes is its reissue after the failover (harmless to data, the issue's defect); S-Chain keys are per volume range, so the column does not apply.\n\n")
	b.WriteString("| cluster | killed | longest gap | first new upload done | longest wait after the kill | uploads | failed uploads | keys issued twice | stock keys reissued | read back intact |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	var stockStall, leaderlessWait time.Duration
	leaderless := false
	for _, k := range r.MasterKills {
		c := k.Check
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d | %d of %d assigns | %s | %d of %d |\n", k.Name, k.Killed, benchmark.Duration(c.LongestGap),
			after(k.FirstAfter), benchmark.Duration(k.LongestAfter), c.Uploads, c.Failed, c.IssuedTwice, c.Assigned, globalReissues(k), c.ReadBack, c.Uploads)
		switch {
		case k.Leaderless:
			leaderless, leaderlessWait = true, k.LongestAfter
		case !k.SChain:
			stockStall = k.LongestAfter
		}
	}
	if leaderless {
		fmt.Fprintf(&b, "\nLeaderless masters, master kill: longest wait %s (target <= 1 s: %s), stock %s.\n",
			benchmark.Duration(leaderlessWait), benchmark.Met(leaderlessWait <= time.Second), benchmark.Duration(stockStall))
	}

	if vk := r.ValidatorKill; vk != nil {
		c := vk.Check
		var liveFailed, deadFailed, liveUploads, deadUploads int
		var liveStall, deadStall time.Duration
		for _, v := range vk.Volumes {
			if v.OwnerDead {
				deadFailed += v.FailedAttempts
				deadUploads += v.Uploads
				deadStall = max(deadStall, v.Stall.Longest)
			} else {
				liveFailed += v.FailedAttempts
				liveUploads += v.Uploads
				liveStall = max(liveStall, v.Stall.Longest)
			}
		}
		fmt.Fprintf(&b, "\nValidator kill (S-Chain cluster): %d clients upload over %d volumes; kill -9 of %s (owner of %d volumes' key ranges) after %v, load for %v after it.\n\n",
			s.Uploaders, len(vk.Volumes), vk.Killed, vk.Owned, s.KillBefore, s.ValidatorKillAfter)
		b.WriteString("| volumes | uploads after the kill | failed attempts | longest stall of one volume |\n| --- | ---: | ---: | ---: |\n")
		fmt.Fprintf(&b, "| owner alive (%d) | %d | %d | %s |\n", len(vk.Volumes)-vk.Owned, liveUploads, liveFailed, benchmark.Duration(liveStall))
		fmt.Fprintf(&b, "| owner killed (%d) | %d | %d | %s |\n", vk.Owned, deadUploads, deadFailed, benchmark.Duration(deadStall))
		fmt.Fprintf(&b, "\nWhole run: %s; failed attempts naming no volume: %d. Zero failed uploads on volumes whose owner is alive: %s.\n",
			c, vk.Unattributed, benchmark.Met(liveFailed == 0 && c.Failed == 0))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// globalReissues is the stock sequencer's keys handed out twice across
// volumes ("n/a" for S-Chain, whose keys are per volume).
func globalReissues(k MasterKill) string {
	if k.SChain {
		return "n/a"
	}
	return fmt.Sprint(k.Check.GlobalKeysTwice)
}

func after(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return "+" + benchmark.Duration(d)
}
