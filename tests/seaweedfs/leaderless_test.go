//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
)

// TestLeaderlessMasterKills: 3 leaderless masters (type schain-leaderless:
// every master takes the volume server's heartbeats, assigns from its own
// S-Chain reservations and grows volumes; raft leads nothing of
// allocation). Clients upload through the master list, each assign to the
// next master and on any error to the one after. kill -9 the raft leader;
// once it is restarted and serving again, kill -9 another master. No key is
// issued twice, every acknowledged upload reads back, no upload fails, and
// no client waits anywhere near stock's election and warm-up (about 16 s,
// TestA_StockLeaderKill); the longest wait is recorded.
func TestLeaderlessMasterKills(t *testing.T) {
	require := require.New(t)
	pfx := prefix(t)
	floors := freshFloors(t, pfx)
	c := startCluster(t, cluster.ModeLeaderless, pfx, nil)
	u := startUploads(t, c, 8)
	waitFor(t, time.Minute, "200 uploads before the first kill", func() bool { return u.acked() >= 200 })
	for _, m := range c.MasterAddrs() {
		require.Positive(u.ackedAt(m, time.Time{}), "master %s served no upload: every master assigns", m)
	}

	first, firstAt := killLeader(t, c)
	// 3 s without it (its successors in raft are still electing, or warming
	// up in stock), and at least 200 more uploads.
	waitFor(t, time.Minute, "3 s and 200 uploads after the first kill", func() bool {
		return time.Since(firstAt) >= 3*time.Second && u.ackedSince(firstAt) >= 200
	})
	i, err := c.MasterOf(first)
	require.NoError(err)
	restartedAt := time.Now()
	require.NoError(c.StartMaster(i))
	waitFor(t, time.Minute, "the restarted master to serve 50 uploads", func() bool { return u.ackedAt(first, restartedAt) >= 50 })
	t.Logf("%s serves again %s after its restart", first, describe(time.Since(restartedAt)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := c.MasterAddrs()[(i+1)%len(c.MasterAddrs())]
	j, err := c.MasterOf(second)
	require.NoError(err)
	secondAt := time.Now()
	require.NoError(c.KillMaster(ctx, j))
	t.Logf("killed %s (master%d) with SIGKILL", second, j+1)
	waitFor(t, time.Minute, "3 s and 200 uploads after the second kill", func() bool {
		return time.Since(secondAt) >= 3*time.Second && u.ackedSince(secondAt) >= 200
	})
	res := u.stop()
	check := verify(t, res)
	require.NoError(check.Err())
	require.Zero(check.IssuedTwice)
	require.Equal(check.Uploads, check.ReadBack)
	require.Zero(check.Failed, "an upload gave up: %+v", lastFailures(res))
	requireCommitted(t, pfx, floors, res)

	logSlowest(t, res, map[string]time.Time{"first kill": firstAt, "restart": restartedAt, "second kill": secondAt})
	perMaster := map[string]int{}
	for _, up := range res.Uploads {
		perMaster[up.Master]++
	}
	afterFirst, afterRestart, afterSecond := longestUpload(res, firstAt, restartedAt), longestUpload(res, restartedAt, secondAt), longestUpload(res, secondAt, res.End)
	record(t, "leaderless-master-kills", map[string]any{
		"killed_first": first, "killed_second": second, "uploads_per_master": perMaster,
		"uploads": check.Uploads, "assigns": check.Assigned, "keys_issued_twice": check.IssuedTwice,
		"read_back": check.ReadBack, "lost": check.Lost, "altered": check.Altered,
		"failed_uploads": check.Failed, "failed_attempts": check.FailedAttempts,
		"longest_upload_ms": check.LongestWait.Milliseconds(), "longest_gap_ms": check.LongestGap.Milliseconds(),
		"longest_upload_after_first_kill_ms":  afterFirst.Milliseconds(),
		"longest_upload_after_restart_ms":     afterRestart.Milliseconds(),
		"longest_upload_after_second_kill_ms": afterSecond.Milliseconds(),
		"restarted_master_served_after_ms":    servedAfter(res, first, restartedAt).Milliseconds(),
	})
	// From the first kill to the end (both kills and the restarted master's
	// warm-up) no client waits for a master: a dead or warming master costs
	// one retry to the next. The bound is 3x the 1 s target (make bench-weed
	// measures that) because this machine is shared and loaded; stock waits
	// about 16 s. Uploads before the first kill wait for the empty cluster's
	// first volumes, as in stock, and are not bounded here.
	worst := max(afterFirst, afterRestart, afterSecond)
	t.Logf("longest upload from the first kill to the end: %s (first kill %s, restart %s, second kill %s; stock about 16 s)",
		describe(worst), describe(afterFirst), describe(afterRestart), describe(afterSecond))
	require.LessOrEqual(worst, 3*time.Second, "a client waited for a master: leaderless masters should cost one retry")
}

// servedAfter is how long after t0 master first acknowledged an upload it
// assigned.
func servedAfter(res workload.Result, master string, t0 time.Time) time.Duration {
	var first time.Time
	for _, up := range res.Uploads {
		if up.Master == master && up.Start.After(t0) && (first.IsZero() || up.Done.Before(first)) {
			first = up.Done
		}
	}
	return first.Sub(t0)
}

// logSlowest logs the five longest uploads and a few failed attempts, each
// placed relative to the marks (the kills, the restart).
func logSlowest(t *testing.T, res workload.Result, marks map[string]time.Time) {
	at := func(ts time.Time) string {
		best, name := time.Duration(1<<62), "start"
		for n, m := range marks {
			if d := ts.Sub(m); d >= 0 && d < best {
				best, name = d, n
			}
		}
		if name == "start" {
			best = ts.Sub(res.Start)
		}
		return fmt.Sprintf("%s+%s", name, describe(best))
	}
	ups := slices.Clone(res.Uploads)
	slices.SortFunc(ups, func(a, b workload.Upload) int { return int(b.Wait - a.Wait) })
	for _, up := range ups[:min(5, len(ups))] {
		t.Logf("slow upload: %s from %s, started at %s, took %s", up.Fid, up.Master, at(up.Start), describe(up.Wait))
	}
	for i, f := range res.Failures {
		if i%max(1, len(res.Failures)/8) == 0 {
			t.Logf("failed %s attempt at %s: %.250s", f.Stage, at(f.At), f.Err)
		}
	}
}
