package weedbench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/benchmark"
)

// WriteTables writes the report as Markdown (benchmark.Markdown): the
// steady assigns and the targets they meet, the master kills, the
// validator kill.
func WriteTables(w io.Writer, r *Report) error {
	var m benchmark.Markdown
	writeSteady(&m, r)
	writeMasterKills(&m, r)
	writeValidatorKill(&m, r)
	writeObjectKills(&m, r)
	_, err := m.WriteTo(w)
	return err
}

func writeSteady(m *benchmark.Markdown, r *Report) {
	s := r.Settings
	m.Para("SeaweedFS assigns: %d closed-loop clients, /dir/assign count 1, %d rounds of %v per cluster, interleaved; assigns/s is the median over rounds, latencies pooled over rounds.",
		s.Clients, s.Rounds, s.RoundDuration)
	if s.MasterMilliCPUs > 0 {
		m.Para("Every master limited to %d thousandths of a CPU (a cgroup each, GOMAXPROCS to match): masters as if each had a machine of its own.", s.MasterMilliCPUs)
	}
	m.Table(benchmark.Text("cluster"), benchmark.Num("assigns/s"), benchmark.Num("p50"), benchmark.Num("p95"), benchmark.Num("p99"),
		benchmark.Num("failed"), benchmark.Text("assigns/s per round"), benchmark.Num("keys issued twice"))
	for _, st := range r.Systems {
		var rounds []string
		for _, rd := range st.Rounds {
			rounds = append(rounds, benchmark.Thousands(rd.ReqPerSec))
		}
		m.Row(st.Name, benchmark.Thousands(st.MedianReqPerSec), benchmark.Duration(st.Pooled.P50), benchmark.Duration(st.Pooled.P95), benchmark.Duration(st.Pooled.P99),
			st.Pooled.Failures, strings.Join(rounds, ", "), fmt.Sprintf("%d of %d", st.Duplicates.Overlapping, st.Duplicates.Allocations))
	}
	m.Para("S-Chain sequencer / stock: throughput %.2fx (target >= 0.95x: %s), p99 %.2fx (target <= 1.2x: %s).",
		r.ThroughputRatio, benchmark.Met(r.ThroughputRatio >= 0.95), r.P99Ratio, benchmark.Met(r.P99Ratio > 0 && r.P99Ratio <= 1.2))
	if r.LeaderlessRatio > 0 {
		m.Line("Leaderless masters (3, clients spread over them) / stock (1 leader): throughput %.2fx (target >= 1.5x: %s), p99 %.2fx.\n",
			r.LeaderlessRatio, benchmark.Met(r.LeaderlessRatio >= 1.5), r.LeaderlessP99Ratio)
	}
}

func writeMasterKills(m *benchmark.Markdown, r *Report) {
	s := r.Settings
	m.Para("Leader kill: %d clients upload (assign, then write at once) and %d only assign (keys held unwritten); kill -9 of the leader after %v, load for %v after it. Gap: longest time without any acknowledged upload.",
		s.Uploaders, s.Assigners, s.KillBefore, s.MasterKillAfter)
	m.Para("Keys issued twice: the same key on the same volume. Stock keys reissued: the stock sequencer's keys are global, so a key handed out twice on two volumes is its reissue after the failover (harmless to data, the issue's defect); S-Chain keys are per volume range, so the column does not apply.")
	m.Table(benchmark.Text("cluster"), benchmark.Text("killed"), benchmark.Num("longest gap"), benchmark.Num("first new upload done"),
		benchmark.Num("longest wait after the kill"), benchmark.Num("uploads"), benchmark.Num("failed uploads"), benchmark.Num("keys issued twice"),
		benchmark.Num("stock keys reissued"), benchmark.Num("read back intact"))
	var stockStall, leaderlessWait time.Duration
	leaderless := false
	for _, k := range r.MasterKills {
		c := k.Check
		m.Row(k.Name, k.Killed, benchmark.Duration(c.LongestGap), after(k.FirstAfter), benchmark.Duration(k.LongestAfter), c.Uploads, c.Failed,
			fmt.Sprintf("%d of %d assigns", c.IssuedTwice, c.Assigned), globalReissues(k), fmt.Sprintf("%d of %d", c.ReadBack, c.Uploads))
		switch {
		case k.Leaderless:
			leaderless, leaderlessWait = true, k.LongestAfter
		case !k.SChain:
			stockStall = k.LongestAfter
		}
	}
	if leaderless {
		m.Para("Leaderless masters, master kill: longest wait %s (target <= 1 s: %s), stock %s.",
			benchmark.Duration(leaderlessWait), benchmark.Met(leaderlessWait <= time.Second), benchmark.Duration(stockStall))
	}
}

func writeValidatorKill(m *benchmark.Markdown, r *Report) {
	vk := r.ValidatorKill
	if vk == nil {
		return
	}
	s, c := r.Settings, vk.Check
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
	m.Para("Validator kill (S-Chain cluster): %d clients upload over %d volumes; kill -9 of %s (owner of %d volumes' key ranges) after %v, load for %v after it.",
		s.Uploaders, len(vk.Volumes), vk.Killed, vk.Owned, s.KillBefore, s.ValidatorKillAfter)
	m.Table(benchmark.Text("volumes"), benchmark.Num("uploads after the kill"), benchmark.Num("failed attempts"), benchmark.Num("longest stall of one volume"))
	m.Row(fmt.Sprintf("owner alive (%d)", len(vk.Volumes)-vk.Owned), liveUploads, liveFailed, benchmark.Duration(liveStall))
	m.Row(fmt.Sprintf("owner killed (%d)", vk.Owned), deadUploads, deadFailed, benchmark.Duration(deadStall))
	m.Para("Whole run: %s; failed attempts naming no volume: %d. Zero failed uploads on volumes whose owner is alive: %s.",
		c, vk.Unattributed, benchmark.Met(liveFailed == 0 && c.Failed == 0))
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

func writeObjectKills(m *benchmark.Markdown, r *Report) {
	if len(r.ObjectKills) == 0 {
		return
	}
	s := r.Settings
	m.Para("Object kill: %d S3 clients PUT %d-byte objects through the S3 gateway and its filer; kill -9 of the master the filer follows (the raft leader; for raftless masters the first of the filer's list) after %v, writes for %v after it.",
		s.Writers, 2048, s.KillBefore, s.ObjectKillAfter)
	m.Table(benchmark.Text("cluster"), benchmark.Text("masters run raft"), benchmark.Text("killed"), benchmark.Num("longest PUT after the kill"),
		benchmark.Num("longest PUT before"), benchmark.Num("objects/s"), benchmark.Num("objects"), benchmark.Num("failed attempts"),
		benchmark.Num("failed"), benchmark.Num("read back intact"))
	var raftless []ObjectKill
	for _, k := range r.ObjectKills {
		raft := "yes"
		if k.RaftPeers == 0 && !k.RaftState {
			raft = "no (no peers, no raft state)"
		}
		m.Row(k.Name, raft, k.Killed, benchmark.Duration(k.LongestAfter), benchmark.Duration(k.LongestBefore), benchmark.Thousands(k.PerSec),
			k.Acked, k.FailedAttempts, k.Failed, fmt.Sprintf("%d of %d", k.Check.ReadBack, k.Check.Acked))
		if k.Mode == cluster.ModeRaftless {
			raftless = append(raftless, k)
		}
	}
	for _, k := range raftless {
		m.Para("Raftless masters, master kill: longest PUT %s (target <= 300 ms: %s), %d lost (target 0: %s), no raft: %s.",
			benchmark.Duration(k.LongestAfter), benchmark.Met(k.LongestAfter <= 300*time.Millisecond),
			k.Check.Lost+k.Check.Altered+k.Failed, benchmark.Met(k.Check.Err() == nil && k.Failed == 0), benchmark.Met(k.RaftPeers == 0 && !k.RaftState))
	}
}
