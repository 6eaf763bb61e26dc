//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/cutover"
	"github.com/s-chain/schain/operator/pairs"
	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
)

// leaderKill uploads through c, kills the leader with SIGKILL once uploads
// flow, and keeps uploading until after a new leader served 100 more. It
// returns the evidence and the failover's numbers.
func leaderKill(t *testing.T, c *cluster.Cluster) (workload.Result, workload.Check, map[string]any) {
	require := require.New(t)
	u := startUploads(t, c, 8)
	waitFor(t, time.Minute, "200 uploads before the kill", func() bool { return u.acked() >= 200 })
	old, killedAt := killLeader(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	leader, err := c.WaitLeader(ctx, old)
	require.NoError(err)
	t.Logf("new leader %s after %s", leader, describe(time.Since(killedAt)))
	waitFor(t, 90*time.Second, "100 uploads after the failover", func() bool { return u.ackedSince(killedAt) >= 100 })
	res := u.stop()
	check := verify(t, res)
	var firstAfter time.Time
	for _, up := range res.Uploads {
		if up.Start.After(killedAt) && (firstAfter.IsZero() || up.Done.Before(firstAfter)) {
			firstAfter = up.Done
		}
	}
	numbers := map[string]any{
		"mode": c.Mode(), "killed": old, "new_leader": leader,
		"uploads": check.Uploads, "assigns": check.Assigned, "keys_issued_twice": check.IssuedTwice,
		"keys_on_several_volumes": check.GlobalKeysTwice, "read_back": check.ReadBack, "lost": check.Lost, "altered": check.Altered,
		"failed_uploads": check.Failed, "failed_attempts": check.FailedAttempts,
		"longest_upload_ms": check.LongestWait.Milliseconds(), "longest_gap_ms": check.LongestGap.Milliseconds(),
		"first_upload_started_after_kill_ms": firstAfter.Sub(killedAt).Milliseconds(),
	}
	return res, check, numbers
}

// TestA_StockLeaderKill is the baseline: stock SeaweedFS (raft mode) while
// its leader is killed mid-upload. It records what stock does (keys issued
// twice, failed or clobbered writes, the stall) and checks that the
// failover happened and the cluster came back.
func TestA_StockLeaderKill(t *testing.T) {
	c := startCluster(t, cluster.ModeRaft, "", nil)
	_, check, numbers := leaderKill(t, c)
	record(t, "stock-leader-kill", numbers)
	require.Positive(t, check.Uploads)
	require.Greater(t, check.LongestGap, 3*time.Second, "stock stalls every assign through an election and the new leader's warm-up")
}

// TestB_SChainLeaderKill: the same kill with the S-Chain sequencer. The new
// leader takes fresh reservations (the old leader's unused keys are skipped,
// never reissued): zero keys issued twice, every acknowledged upload reads
// back exactly, and every key lies in a reservation S-Chain committed.
func TestB_SChainLeaderKill(t *testing.T) {
	require := require.New(t)
	pfx := prefix(t)
	floors := freshFloors(t, pfx)
	c := startCluster(t, cluster.ModeSChain, pfx, nil)
	res, check, numbers := leaderKill(t, c)
	record(t, "schain-leader-kill", numbers)
	require.NoError(check.Err())
	require.Zero(check.IssuedTwice)
	require.Equal(check.Uploads, check.ReadBack)
	require.Zero(check.Failed, "an upload gave up: %+v", lastFailures(res))
	requireCommitted(t, pfx, floors, res)
}

// requireCommitted checks that every assigned key and volume id lies in
// what S-Chain committed to the cluster's ranges: at or above the cutover
// floors and below each range's counter.
func requireCommitted(t *testing.T, pfx string, floors cutover.Floors, res workload.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := router(t)
	next := map[uint32]uint64{}
	for _, a := range res.Assigned {
		if _, ok := next[a.Volume]; !ok {
			al, err := r.GetAllocation(ctx, schainseq.KeyRange(pfx, a.Volume, 1))
			require.NoError(t, err)
			next[a.Volume] = al.Next
		}
		require.GreaterOrEqual(t, a.Key, floors.FileKey, "key below the cutover floor")
		require.Less(t, a.Key+a.Count-1, next[a.Volume], "volume %d key %d was never reserved on S-Chain", a.Volume, a.Key)
		require.GreaterOrEqual(t, uint64(a.Volume), floors.VolumeID, "volume id below the cutover floor")
	}
	vols, err := r.GetAllocation(ctx, schainseq.VolumeRange(pfx))
	require.NoError(t, err)
	for v := range next {
		require.Less(t, uint64(v), vols.Next, "volume %d was never reserved on S-Chain", v)
	}
	t.Logf("all %d assigns lie in S-Chain reservations of %d volume ranges", len(res.Assigned), len(next))
}

func lastFailures(res workload.Result) []workload.Failure {
	if n := len(res.Failures); n > 5 {
		return res.Failures[n-5:]
	}
	return res.Failures
}

// TestC_ShadowThenCutover: a cluster in schain-shadow mode serves live
// uploads while S-Chain mirrors them; the comparator's gate opens on the
// recorded pairs; the cutover (masters stopped, floors recorded, masters
// restarted in schain mode) happens while uploads go on; afterwards no
// S-Chain key or volume id is at or below a legacy one, and every upload of
// both eras reads back. Then a rollback to the stock sequencer (masters
// restarted in raft mode with floors above every S-Chain reservation) while
// uploads go on: no stock key or volume id at or below an S-Chain one, and
// every upload of the three eras reads back.
func TestC_ShadowThenCutover(t *testing.T) {
	require := require.New(t)
	pfx := prefix(t)
	c := startCluster(t, cluster.ModeShadow, pfx, nil)
	u := startUploads(t, c, 8)

	cfg := pairs.ComparatorConfig(shadow.DefaultConfig(), pfx)
	cfg.LateAfter = 0 // a loaded 2-core machine pauses; lateness is not what this test judges
	cfg.Gate.MinRequests, cfg.Gate.MinDuration = 300, 5*time.Second
	var rep shadow.Report
	var set *pairs.Set
	waitFor(t, 2*time.Minute, "the cutover gate to open on live pairs", func() bool {
		s, err := pairs.Load(c.PairsDirs()...)
		if err != nil {
			return false
		}
		comp, err := s.Compare(cfg)
		require.NoError(err)
		set, rep = s, comp.Report()
		return rep.Decision.Ready
	})
	t.Logf("gate READY: %d pairs, %d agreed, window %d requests over %v; findings %v; mirror totals %+v",
		rep.Requests, rep.Agreed, rep.Decision.WindowRequests, rep.Decision.WindowDurationNS, rep.Counts, set.Totals())
	require.Zero(rep.ByClass[shadow.ClassSChainViolation])

	switchStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	floors, err := cutover.ToSChain(ctx, c, router(t).Fresh(), cutover.Options{Prefix: pfx, Margins: cutover.Margins{FileKey: 1000, VolumeID: 2}, Out: testWriter{t}})
	require.NoError(err)
	switchEnd := time.Now()
	t.Logf("cutover took %s; floors %+v", describe(switchEnd.Sub(switchStart)), floors)

	// New volumes get S-Chain ids.
	waitFor(t, 90*time.Second, "100 uploads after the cutover", func() bool { return u.ackedSince(switchEnd) >= 100 })
	grown := growVolumes(t, c, 2)
	res := u.stop()
	check := verify(t, res)
	require.NoError(check.Err())

	var legacyMaxKey, schainMinKey uint64
	var legacyMaxVol uint32
	schainMinKey = ^uint64(0)
	var before, after int
	for _, a := range res.Assigned {
		switch {
		case a.At.Before(switchStart):
			before++
			legacyMaxKey = max(legacyMaxKey, a.Key+a.Count-1)
			legacyMaxVol = max(legacyMaxVol, a.Volume)
		case a.At.After(switchEnd):
			after++
			schainMinKey = min(schainMinKey, a.Key)
		}
	}
	require.Positive(before)
	require.Positive(after)
	require.Greater(schainMinKey, legacyMaxKey, "an S-Chain key at or below a legacy one")
	require.GreaterOrEqual(floors.FileKey, legacyMaxKey+1)
	require.NotEmpty(grown)
	for _, v := range grown {
		require.Greater(v, legacyMaxVol, "S-Chain volume id %d at or below legacy volume %d", v, legacyMaxVol)
		require.GreaterOrEqual(uint64(v), floors.VolumeID)
	}
	record(t, "shadow-cutover", map[string]any{
		"pairs": rep.Requests, "agreed": rep.Agreed, "gate_window_requests": rep.Decision.WindowRequests,
		"findings": rep.Counts, "mirror": set.Totals(), "cutover_ms": switchEnd.Sub(switchStart).Milliseconds(),
		"legacy_max_key": legacyMaxKey, "schain_min_key": schainMinKey, "floors": floors,
		"legacy_max_volume": legacyMaxVol, "schain_volumes": grown,
		"uploads_before": before, "uploads_after": after, "keys_issued_twice": check.IssuedTwice,
		"read_back": check.ReadBack, "failed_uploads": check.Failed, "longest_gap_ms": check.LongestGap.Milliseconds(),
	})

	// Rollback to the stock sequencer while uploads go on: its keys and
	// volume ids start above every id S-Chain reserved for the cluster.
	var schainMaxKey uint64
	var schainMaxVol uint32
	for _, a := range res.Assigned {
		if a.At.After(switchEnd) {
			schainMaxKey = max(schainMaxKey, a.Key+a.Count-1)
			schainMaxVol = max(schainMaxVol, a.Volume)
		}
	}
	u2 := startUploads(t, c, 8)
	waitFor(t, time.Minute, "uploads before the rollback", func() bool { return u2.acked() >= 100 })
	rctx, rcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer rcancel()
	rollStart := time.Now()
	back, err := cutover.ToStock(rctx, c, router(t).Fresh(), cutover.Options{Prefix: pfx, Band: 1, Out: testWriter{t}})
	require.NoError(err)
	rollEnd := time.Now()
	waitFor(t, 90*time.Second, "100 uploads after the rollback", func() bool { return u2.ackedSince(rollEnd) >= 100 })
	stockGrown := growVolumes(t, c, 1)
	res2 := u2.stop()
	for _, a := range res2.Assigned {
		if a.At.Before(rollStart) {
			schainMaxKey = max(schainMaxKey, a.Key+a.Count-1)
		}
	}
	require.Greater(back.FileKey, schainMaxKey, "rollback floor at or below an S-Chain key")
	var stockMinKey uint64 = ^uint64(0)
	var afterRollback int
	for _, a := range res2.Assigned {
		if a.At.After(rollEnd) {
			afterRollback++
			stockMinKey = min(stockMinKey, a.Key)
		}
	}
	require.Positive(afterRollback)
	require.Greater(stockMinKey, schainMaxKey, "the stock sequencer reissued an S-Chain key")
	for _, v := range stockGrown {
		require.Greater(v, schainMaxVol)
		require.GreaterOrEqual(uint64(v), back.VolumeID, "a stock volume id below the rollback floor")
	}
	all := res
	all.Uploads = append(slices.Clone(res.Uploads), res2.Uploads...)
	all.Assigned = append(slices.Clone(res.Assigned), res2.Assigned...)
	all.Failures = append(slices.Clone(res.Failures), res2.Failures...)
	check2 := verify(t, all)
	require.NoError(check2.Err(), "across the three eras (stock, S-Chain, stock again)")
	record(t, "rollback", map[string]any{
		"schain_max_key": schainMaxKey, "floors": back, "stock_min_key_after": stockMinKey,
		"stock_volumes_after": stockGrown, "schain_max_volume": schainMaxVol, "rollback_ms": rollEnd.Sub(rollStart).Milliseconds(),
		"uploads_all_eras": check2.Uploads, "keys_issued_twice": check2.IssuedTwice, "read_back": check2.ReadBack,
	})
}

// growVolumes grows n more volumes of the test collection and returns
// their ids.
func growVolumes(t *testing.T, c *cluster.Cluster, n int) []uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := c.Volumes(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Grow(ctx, "e2e", n))
	after, err := c.Volumes(ctx)
	require.NoError(t, err)
	var grown []uint32
	for _, v := range after {
		if !slices.Contains(before, v) {
			grown = append(grown, v)
		}
	}
	t.Logf("grew volumes %v (before: %v)", grown, before)
	return grown
}

// TestZ_ValidatorKill kills -9 the S-Chain validator that owns the most of
// the cluster's key ranges while clients upload through a schain-mode
// cluster. Uploads to volumes whose owner lives never fail, no upload gives
// up, no key is issued twice, every acknowledged upload reads back. (The
// dead owner's volumes keep serving from reservations already committed;
// their ranges move to a live validator within two liveness epochs.) It runs
// last: the network keeps one validator down.
func TestZ_ValidatorKill(t *testing.T) {
	require := require.New(t)
	pfx := prefix(t)
	floors := freshFloors(t, pfx)
	c := startCluster(t, cluster.ModeSChain, pfx, nil)
	u := startUploads(t, c, 8)
	waitFor(t, time.Minute, "300 uploads before the kill", func() bool { return u.acked() >= 300 })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	grown := growVolumes(t, c, 4) // more volumes, more owners
	vols, err := c.Volumes(ctx)
	require.NoError(err)
	r := router(t)
	owners := map[uint32]ids.NodeID{}
	count := map[ids.NodeID]int{}
	for _, v := range vols {
		o, err := r.GetOwner(ctx, schainseq.KeyRange(pfx, v, 1))
		require.NoError(err)
		owners[v] = ids.NodeID(o.Owner)
		count[ids.NodeID(o.Owner)]++
	}
	var victim ids.NodeID
	for id, n := range count {
		if victim == ids.EmptyNodeID || n > count[victim] {
			victim = id
		}
	}
	t.Logf("volumes %v (grown %v); key range owners %v; killing %s (owns %d of %d)", vols, grown, count, victim, count[victim], len(vols))
	killedAt := time.Now()
	require.NoError(network.KillNode(ctx, victim))
	const measure = 45 * time.Second
	waitFor(t, measure+time.Minute, "uploads to go on for 45 s after the kill", func() bool {
		return time.Since(killedAt) >= measure && u.ackedSince(killedAt.Add(measure-5*time.Second)) > 0
	})
	res := u.stop()
	check := verify(t, res)
	require.NoError(check.Err())
	requireCommitted(t, pfx, floors, res)

	live, dead := map[uint32]int{}, map[uint32]int{}
	for _, up := range res.Uploads {
		if up.Done.After(killedAt) {
			if owners[up.Volume] == victim {
				dead[up.Volume]++
			} else {
				live[up.Volume]++
			}
		}
	}
	var liveFailed, deadFailed, unattributed, before int
	for _, f := range res.Failures {
		if !f.At.After(killedAt) {
			if before++; before <= 3 {
				t.Logf("failed %s attempt before the kill, on volume %d: %.300s", f.Stage, f.Volume, f.Err)
			}
			continue
		}
		o, known := owners[f.Volume]
		switch {
		case !known:
			unattributed++
		case o == victim:
			deadFailed++
		default:
			liveFailed++
		}
		t.Logf("failed %s attempt on volume %d (final %v): %.200s", f.Stage, f.Volume, f.Final, f.Err)
	}
	record(t, "validator-kill", map[string]any{
		"killed": victim.String(), "owned_volumes": count[victim], "volumes": len(vols),
		"uploads_after_kill_live_owner_volumes": live, "uploads_after_kill_dead_owner_volumes": dead,
		"failed_attempts_live_owner_volumes": liveFailed, "failed_attempts_dead_owner_volumes": deadFailed,
		"failed_attempts_unattributed": unattributed, "failed_uploads": check.Failed,
		"keys_issued_twice": check.IssuedTwice, "read_back": check.ReadBack, "longest_upload_ms": check.LongestWait.Milliseconds(),
		"longest_gap_ms": check.LongestGap.Milliseconds(),
	})
	require.Zero(liveFailed, "uploads to volumes of live owners failed")
	require.Zero(check.Failed, "an upload gave up")
	require.NotEmpty(live, "no upload reached a live owner's volume after the kill")
}
