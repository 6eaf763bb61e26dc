// Package weedbench measures real SeaweedFS clusters side by side: the stock
// sequencer against the S-Chain sequencer and against leaderless masters
// (type schain-leaderless: every master assigns), on one machine in one run.
//
//   - Steady assigns: closed-loop clients send /dir/assign (count 1) to each
//     cluster's masters in interleaved rounds (A B, B A, ...), so that drift
//     of the shared machine weighs both equally: assigns/s and latency
//     percentiles, from the client. The leaderless cluster's clients send
//     each assign to the next master in turn.
//   - Master kill: clients upload (assign, then write at once) and others
//     only assign (keys held unwritten across a failover), the leader gets
//     SIGKILL; the stall every client sees, failed uploads, keys issued twice
//     and every acknowledged upload read back; for the leaderless cluster
//     the longest an upload waited after the kill (a retry to the next
//     master) against stock's stall.
//   - Validator kill (S-Chain cluster): the validator owning the most of the
//     cluster's key ranges gets SIGKILL while clients upload; per volume,
//     stalls and failures, split by whether the volume's owner lives.
//   - Object kill (stock, leaderless and raftless clusters with a filer and
//     an S3 gateway): S3 writers PUT objects through the gateway while the
//     master the filer follows gets SIGKILL; the longest PUT after the
//     kill, the rate, failures and every acknowledged object read back.
//
// The load generator and statistics are package benchmark's; the uploads and
// their checks are package workload's.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package weedbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/ava-labs/avalanchego/ids"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/seaweedfs/schainseq"
	"github.com/s-chain/schain/tests/framework/localnet"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/seaweedfs/workload"
)

// Settings shape the bench.
type Settings struct {
	// Clients are the closed-loop assign clients of a steady round.
	Clients int `json:"clients"`
	// Rounds of RoundDuration per cluster, interleaved.
	Rounds        int           `json:"rounds"`
	RoundDuration time.Duration `json:"round_duration_ns"`
	// Uploaders and Assigners are the clients of the kill phases: uploads
	// (assign and write) and assigns only.
	Uploaders int `json:"uploaders"`
	Assigners int `json:"assigners"`
	// KillBefore is the load before a kill; MasterKillAfter and
	// ValidatorKillAfter how long the load goes on after it.
	KillBefore         time.Duration `json:"kill_before_ns"`
	MasterKillAfter    time.Duration `json:"master_kill_after_ns"`
	ValidatorKillAfter time.Duration `json:"validator_kill_after_ns"`
	// Volumes is how many volumes the S-Chain cluster has before the
	// validator kill (more volumes, more owners).
	Volumes int `json:"volumes"`
	// Writers are the S3 clients of the object kills, and ObjectKillAfter
	// how long they write after the kill.
	Writers         int           `json:"writers"`
	ObjectKillAfter time.Duration `json:"object_kill_after_ns"`
	// MasterMilliCPUs, if not zero, limits every master of every cluster
	// to this many thousandths of a CPU (cluster.Config.MasterMilliCPUs):
	// masters as if each had a small machine of its own, so that three
	// leaderless masters can be compared with one stock leader on a
	// machine whose cores they would otherwise all share.
	MasterMilliCPUs int `json:"master_milli_cpus,omitempty"`
}

// DefaultSettings fit `make bench` on 2 cores.
func DefaultSettings() Settings {
	return Settings{
		Clients: 16, Rounds: 4, RoundDuration: 10 * time.Second,
		Uploaders: 6, Assigners: 2, KillBefore: 5 * time.Second,
		MasterKillAfter: 30 * time.Second, ValidatorKillAfter: 45 * time.Second, Volumes: 12,
		Writers: 8, ObjectKillAfter: 15 * time.Second,
	}
}

// Env is what the bench runs on: the clusters, the S-Chain network the
// S-Chain clusters use, and their range prefix. Leaderless and Raftless may
// be nil; the object kills run on the clusters with an S3 gateway among
// Stock, Leaderless and Raftless.
type Env struct {
	Stock, SChain, Leaderless, Raftless *cluster.Cluster
	Network                             *localnet.Network
	Prefix                              string
}

// Report is the bench's result.
type Report struct {
	Settings Settings `json:"settings"`
	Systems  []Steady `json:"systems"`
	// ThroughputRatio and P99Ratio are S-Chain over stock (median
	// assigns/s of the rounds; pooled p99).
	ThroughputRatio float64 `json:"throughput_ratio"`
	P99Ratio        float64 `json:"p99_ratio"`
	// LeaderlessRatio and LeaderlessP99Ratio are leaderless masters over
	// stock (the same measures); 0 without a leaderless cluster.
	LeaderlessRatio    float64           `json:"leaderless_throughput_ratio,omitempty"`
	LeaderlessP99Ratio float64           `json:"leaderless_p99_ratio,omitempty"`
	MasterKills        []MasterKill      `json:"master_kills"`
	ValidatorKill      *ValidatorKill    `json:"validator_kill,omitempty"`
	ObjectKills        []ObjectKill      `json:"object_kills,omitempty"`
	Machine            benchmark.Machine `json:"machine"`
	WallTime           time.Duration     `json:"wall_time_ns"`
}

// Steady is one cluster's steady rounds.
type Steady struct {
	Name   string              `json:"name"`
	Rounds []benchmark.Summary `json:"rounds"`
	// Pooled is every round's samples together; MedianReqPerSec the median
	// of the rounds' rates.
	Pooled          benchmark.Summary    `json:"pooled"`
	MedianReqPerSec float64              `json:"median_req_per_sec"`
	Duplicates      benchmark.Duplicates `json:"duplicates"`
}

// MasterKill is one cluster's leader kill.
type MasterKill struct {
	Name   string         `json:"name"`
	SChain bool           `json:"schain"`
	Killed string         `json:"killed"`
	Check  workload.Check `json:"check"`
	// FirstAfter is how long after the kill the first upload started after
	// it was acknowledged.
	FirstAfter time.Duration `json:"first_after_ns"`
	// LongestAfter is the longest upload acknowledged after the kill (the
	// ones in flight at the kill included): the longest a client waited.
	LongestAfter time.Duration `json:"longest_after_ns"`
	// Leaderless: the cluster's masters all assign.
	Leaderless bool `json:"leaderless,omitempty"`
}

// ValidatorKill is the S-Chain cluster's validator kill.
type ValidatorKill struct {
	Killed  string         `json:"killed"`
	Owned   int            `json:"owned"`
	Volumes []VolumeResult `json:"volumes"`
	Check   workload.Check `json:"check"`
	// Unattributed counts failed attempts naming no volume.
	Unattributed int `json:"unattributed_failures"`
}

// VolumeResult is one volume through the validator kill.
type VolumeResult struct {
	Volume    uint32 `json:"volume"`
	Owner     string `json:"owner"`
	OwnerDead bool   `json:"owner_dead"`
	// Uploads acknowledged after the kill; FailedAttempts and Failed
	// (final) uploads after it; Stall the longest gap after it.
	Uploads        int             `json:"uploads"`
	FailedAttempts int             `json:"failed_attempts"`
	Failed         int             `json:"failed"`
	Stall          benchmark.Stall `json:"stall"`
}

// Run runs the phases and returns the report; the clusters stay running
// (the caller stops them).
func Run(ctx context.Context, env Env, s Settings, progress io.Writer) (*Report, error) {
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(progress, "[%6s] "+format+"\n", append([]any{time.Since(began).Round(time.Second)}, args...)...)
	}
	rep := &Report{Settings: s}
	systems := []struct {
		name string
		c    *cluster.Cluster
	}{{"seaweedfs-stock", env.Stock}, {"seaweedfs-schain", env.SChain}}
	if env.Leaderless != nil {
		systems = append(systems, struct {
			name string
			c    *cluster.Cluster
		}{"seaweedfs-leaderless", env.Leaderless})
	}
	assigners := make([]*assigner, len(systems))
	for i, sys := range systems {
		a, err := newAssigner(sys.c.MasterAddrs(), "bench", sys.c.Mode().Leaderless())
		if err != nil {
			return nil, err
		}
		defer a.close()
		assigners[i] = a
		logf("warming up %s: assigns until volumes exist, then %v of load", sys.name, s.KillBefore)
		if err := warmUp(ctx, a, s); err != nil {
			return nil, fmt.Errorf("%s: %w", sys.name, err)
		}
	}

	// Steady rounds, interleaved.
	samples := make([][]benchmark.Sample, len(systems))
	elapsed := make([]time.Duration, len(systems))
	rep.Systems = make([]Steady, len(systems))
	for i, sys := range systems {
		rep.Systems[i].Name = sys.name
	}
	all := make([][]benchmark.Sample, len(systems))
	for k, slot := range benchmark.Schedule(len(systems), s.Rounds) {
		i := slot.System
		logf("round %d/%d (%d of %d): %s for %v", slot.Round+1, s.Rounds, k+1, len(systems)*s.Rounds, systems[i].name, s.RoundDuration)
		d := benchmark.Start(ctx, benchmark.Load{System: assigners[i], Ranges: []string{"bench"}, Clients: s.Clients,
			Pick: benchmark.RoundRobin(1), Count: 1, Timeout: 10 * time.Second})
		err := sleep(ctx, s.RoundDuration)
		got, took := d.Stop()
		if err != nil {
			return nil, err
		}
		sum := benchmark.Summarize(got, took)
		logf("   %s: %s assigns/s, p50 %s, p99 %s, %d failed", systems[i].name, benchmark.Thousands(sum.ReqPerSec),
			benchmark.Duration(sum.P50), benchmark.Duration(sum.P99), sum.Failures)
		rep.Systems[i].Rounds = append(rep.Systems[i].Rounds, sum)
		for _, x := range got {
			if x.End <= took {
				samples[i] = append(samples[i], x)
			}
		}
		elapsed[i] += took
		all[i] = append(all[i], got...)
	}
	for i := range rep.Systems {
		st := &rep.Systems[i]
		st.Pooled = benchmark.Summarize(samples[i], elapsed[i])
		var rps []float64
		for _, r := range st.Rounds {
			rps = append(rps, r.ReqPerSec)
		}
		st.MedianReqPerSec = benchmark.Median(rps)
		st.Duplicates = benchmark.FindDuplicates(benchmark.Intervals(all[i], true))
	}
	if st := rep.Systems[0]; st.MedianReqPerSec > 0 && st.Pooled.P99 > 0 {
		rep.ThroughputRatio = rep.Systems[1].MedianReqPerSec / st.MedianReqPerSec
		rep.P99Ratio = float64(rep.Systems[1].Pooled.P99) / float64(st.Pooled.P99)
		if len(rep.Systems) > 2 {
			rep.LeaderlessRatio = rep.Systems[2].MedianReqPerSec / st.MedianReqPerSec
			rep.LeaderlessP99Ratio = float64(rep.Systems[2].Pooled.P99) / float64(st.Pooled.P99)
		}
	}

	// Leader kills.
	for _, sys := range systems {
		mk, err := masterKill(ctx, sys.name, sys.c, s, logf)
		if err != nil {
			return nil, fmt.Errorf("%s: leader kill: %w", sys.name, err)
		}
		rep.MasterKills = append(rep.MasterKills, *mk)
	}

	// Validator kill.
	vk, err := validatorKill(ctx, env, s, logf)
	if err != nil {
		return nil, fmt.Errorf("validator kill: %w", err)
	}
	rep.ValidatorKill = vk

	// Object kills: S3 PUTs through a filer while a master dies.
	for _, sys := range []struct {
		name string
		c    *cluster.Cluster
	}{{"seaweedfs-stock", env.Stock}, {"seaweedfs-leaderless", env.Leaderless}, {"seaweedfs-raftless", env.Raftless}} {
		if sys.c == nil || sys.c.S3Endpoint() == "" {
			continue
		}
		ok, err := objectKill(ctx, sys.name, sys.c, s, logf)
		if err != nil {
			return nil, fmt.Errorf("%s: object kill: %w", sys.name, err)
		}
		rep.ObjectKills = append(rep.ObjectKills, *ok)
	}
	rep.Machine = benchmark.DescribeMachine()
	rep.WallTime = time.Since(began)
	return rep, nil
}

// warmUp assigns until one succeeds (the first assign grows volumes), then
// runs the steady load for s.KillBefore so that connections, leaders and
// reservations (sized by the observed rate) are in place.
func warmUp(ctx context.Context, a *assigner, s Settings) error {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(wctx, 10*time.Second)
		_, _, err := a.Allocate(rctx, "bench", 1)
		rcancel()
		if err == nil {
			break
		}
		if serr := sleep(wctx, 200*time.Millisecond); serr != nil {
			return fmt.Errorf("no assign succeeded: %w", err)
		}
	}
	d := benchmark.Start(ctx, benchmark.Load{System: a, Ranges: []string{"bench"}, Clients: s.Clients, Pick: benchmark.RoundRobin(1), Count: 1, Timeout: 10 * time.Second})
	err := sleep(ctx, s.KillBefore)
	d.Stop()
	return err
}

// run starts a workload on c and returns its runner and a stop function
// that returns the evidence.
func run(ctx context.Context, c *cluster.Cluster, workers int, assignOnly bool) (*workload.Runner, func() workload.Result, error) {
	cfg := workload.DefaultConfig(c.MasterAddrs(), "bench")
	cfg.Workers, cfg.AssignOnly = workers, assignOnly
	cfg.Spread = c.Mode() == cluster.ModeLeaderless
	r, err := workload.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan workload.Result, 1)
	go func() { done <- r.Run(ctx) }()
	return r, func() workload.Result {
		cancel()
		res := <-done
		r.Close()
		return res
	}, nil
}

func masterKill(ctx context.Context, name string, c *cluster.Cluster, s Settings, logf func(string, ...any)) (*MasterKill, error) {
	logf("leader kill %s: %d uploaders and %d assign-only clients, kill -9 of the leader after %v, then %v", name, s.Uploaders, s.Assigners, s.KillBefore, s.MasterKillAfter)
	_, stopUp, err := run(ctx, c, s.Uploaders, false)
	if err != nil {
		return nil, err
	}
	_, stopAs, err := run(ctx, c, s.Assigners, true)
	if err != nil {
		stopUp()
		return nil, err
	}
	err = sleep(ctx, s.KillBefore)
	var leader string
	var killedAt time.Time
	if err == nil {
		leader, err = c.Leader(ctx)
	}
	if err == nil {
		var i int
		if i, err = c.MasterOf(leader); err == nil {
			killedAt = time.Now()
			err = c.KillMaster(ctx, i)
		}
	}
	if err == nil {
		logf("   killed leader %s", leader)
		err = sleep(ctx, s.MasterKillAfter)
	}
	up, as := stopUp(), stopAs()
	if err != nil {
		return nil, err
	}
	res := up
	res.Assigned = append(res.Assigned, as.Assigned...)
	vctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	mk := &MasterKill{Name: name, SChain: c.Mode() != cluster.ModeRaft, Leaderless: c.Mode().Leaderless(),
		Killed: leader, Check: workload.Verify(vctx, res)}
	mk.FirstAfter = -1
	for _, u := range up.Uploads {
		if u.Start.After(killedAt) && (mk.FirstAfter < 0 || u.Done.Sub(killedAt) < mk.FirstAfter) {
			mk.FirstAfter = u.Done.Sub(killedAt)
		}
		if u.Done.After(killedAt) {
			mk.LongestAfter = max(mk.LongestAfter, u.Wait)
		}
	}
	logf("   %s: %s", name, mk.Check)
	return mk, nil
}

func validatorKill(ctx context.Context, env Env, s Settings, logf func(string, ...any)) (*ValidatorKill, error) {
	c := env.SChain
	vols, err := growTo(ctx, c, s.Volumes)
	if err != nil {
		return nil, err
	}
	rcfg := client.DefaultRouterConfig()
	rcfg.Client.Token = env.Network.Token
	r, err := client.NewRouter(env.Network.ChainURIsBase(), env.Network.ChainID.String(), rcfg)
	if err != nil {
		return nil, err
	}
	owners := map[uint32]ids.NodeID{}
	var names []string
	for _, v := range vols {
		o, err := r.GetOwner(ctx, schainseq.KeyRange(env.Prefix, v, 1))
		if err != nil {
			return nil, err
		}
		owners[v] = ids.NodeID(o.Owner)
		names = append(names, o.Owner.String())
	}
	victim := benchmark.BusiestNode(names)
	vk := &ValidatorKill{Killed: victim}
	for _, o := range owners {
		if o.String() == victim {
			vk.Owned++
		}
	}
	logf("validator kill: %d volumes, %d uploaders; kill -9 of %s (owns %d key ranges) after %v, then %v", len(vols), s.Uploaders, victim, vk.Owned, s.KillBefore, s.ValidatorKillAfter)
	_, stop, err := run(ctx, c, s.Uploaders, false)
	if err != nil {
		return nil, err
	}
	err = sleep(ctx, s.KillBefore)
	var killedAt time.Time
	if err == nil {
		var id ids.NodeID
		if id, err = ids.NodeIDFromString(victim); err == nil {
			killedAt = time.Now()
			err = env.Network.KillNode(ctx, id)
		}
	}
	if err == nil {
		err = sleep(ctx, s.ValidatorKillAfter)
	}
	res := stop()
	if err != nil {
		return nil, err
	}
	end := time.Now()
	vctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	vk.Check = workload.Verify(vctx, res)
	done := map[uint32][]time.Duration{}
	per := map[uint32]*VolumeResult{}
	for _, v := range vols {
		per[v] = &VolumeResult{Volume: v, Owner: owners[v].String(), OwnerDead: owners[v].String() == victim}
	}
	for _, u := range res.Uploads {
		done[u.Volume] = append(done[u.Volume], u.Done.Sub(killedAt))
		if vr := per[u.Volume]; vr != nil && u.Done.After(killedAt) {
			vr.Uploads++
		}
	}
	for _, f := range res.Failures {
		if !f.At.After(killedAt) {
			continue
		}
		vr := per[f.Volume]
		if vr == nil {
			vk.Unattributed++
			continue
		}
		vr.FailedAttempts++
		if f.Final {
			vr.Failed++
		}
	}
	for _, v := range vols {
		vr := per[v]
		vr.Stall = benchmark.StallAfter(done[v], 0, end.Sub(killedAt), time.Second)
		vk.Volumes = append(vk.Volumes, *vr)
	}
	logf("   %s", vk.Check)
	return vk, nil
}

// growTo grows the bench collection of c to n volumes and returns the
// cluster's volume ids.
func growTo(ctx context.Context, c *cluster.Cluster, n int) ([]uint32, error) {
	vols, err := c.Volumes(ctx)
	if err != nil {
		return nil, err
	}
	if missing := n - len(vols); missing > 0 {
		if err := c.Grow(ctx, "bench", missing); err != nil {
			return nil, err
		}
		if vols, err = c.Volumes(ctx); err != nil {
			return nil, err
		}
	}
	return vols, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

var _ benchmark.System = (*assigner)(nil)

// assigner is a benchmark.System of /dir/assign. File keys are unique per
// volume only, so an assignment's ids are (volume << 40) | key: the
// duplicate check of one shared key space then finds a key issued twice on
// one volume, and not the same key on two volumes. A spread assigner sends
// each assign to the next master in turn (leaderless masters), and on
// failure to the one after.
type assigner struct {
	c          *seaweed.Client
	collection string
	masters    []string // spread over these; nil: the leader first
	turn       atomic.Uint64
}

func newAssigner(masters []string, collection string, spread bool) (*assigner, error) {
	cfg := seaweed.DefaultConfig(masters...)
	cfg.RequestTimeout, cfg.DialTimeout, cfg.LeaderRefresh = 12*time.Second, 500*time.Millisecond, time.Second
	c, err := seaweed.New(cfg)
	if err != nil {
		return nil, err
	}
	a := &assigner{c: c, collection: collection}
	if spread {
		a.masters = masters
	}
	return a, nil
}

func (a *assigner) assign(ctx context.Context, count uint64) (seaweed.Assignment, error) {
	if a.masters == nil {
		return a.c.Assign(ctx, a.collection, count)
	}
	first := int(a.turn.Add(1))
	var errs []error
	for i := range a.masters {
		as, err := a.c.AssignAt(ctx, a.masters[(first+i)%len(a.masters)], a.collection, count)
		if err == nil {
			return as, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return seaweed.Assignment{}, errors.Join(errs...)
}

func (a *assigner) close() { a.c.Close() }

// keyBits bounds the file keys the encoding holds.
const keyBits = 40

// Allocate implements benchmark.System.
func (a *assigner) Allocate(ctx context.Context, _ string, count uint64) (uint64, uint64, error) {
	as, err := a.assign(ctx, count)
	if err != nil {
		return 0, 0, err
	}
	if as.FileID.Key+as.Count > 1<<keyBits {
		return 0, 0, fmt.Errorf("file key %d does not fit the bench's %d-bit encoding", as.FileID.Key, keyBits)
	}
	return uint64(as.FileID.Volume)<<keyBits | as.FileID.Key, as.Count, nil
}
