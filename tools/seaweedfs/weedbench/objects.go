package weedbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/s-chain/schain/operator/shadow/seaweed"
	"github.com/s-chain/schain/tests/framework/seaweedfs/cluster"
	"github.com/s-chain/schain/tools/seaweedfs/objload"
)

// ObjectKill is one cluster's S3 PUTs through a filer while the master the
// filer follows gets SIGKILL: the raft leader, or for raftless masters the
// first of the filer's master list (the one it is connected to).
type ObjectKill struct {
	Name   string       `json:"name"`
	Mode   cluster.Mode `json:"mode"`
	Killed string       `json:"killed"`
	// Acked objects in the phase, and PerSec their rate over the whole
	// phase (before and after the kill).
	Acked  int     `json:"acked"`
	PerSec float64 `json:"per_sec"`
	// LongestAfter is the longest PUT in flight at some time after the
	// kill: the longest an application waited for its object.
	LongestAfter time.Duration `json:"longest_after_ns"`
	// LongestBefore is the same before the kill, for comparison.
	LongestBefore  time.Duration `json:"longest_before_ns"`
	FailedAttempts int           `json:"failed_attempts"`
	Failed         int           `json:"failed"`
	Check          objload.Check `json:"check"`
	// Raft says whether the masters ran raft: RaftPeers is what the
	// masters' /cluster/status lists, RaftState whether a master's -mdir
	// holds raft state.
	RaftPeers int  `json:"raft_peers"`
	RaftState bool `json:"raft_state"`
}

// objectKill writes objects through c's S3 gateway with s.Writers writers
// for s.KillBefore, kills the master the filer follows, writes on for
// s.ObjectKillAfter, and reads every acknowledged object back.
func objectKill(ctx context.Context, name string, c *cluster.Cluster, s Settings, logf func(string, ...any)) (*ObjectKill, error) {
	logf("object kill %s: %d S3 writers through the filer, kill -9 of the master it follows after %v, then %v", name, s.Writers, s.KillBefore, s.ObjectKillAfter)
	bucket := "bench"
	if err := objload.CreateBucket(ctx, c.S3Endpoint(), bucket); err != nil {
		return nil, err
	}
	store := objload.NewHTTPStore("http://" + c.S3Endpoint() + "/" + bucket)
	cfg := objload.DefaultConfig(name)
	cfg.Workers = s.Writers
	r, err := objload.New(store, cfg)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan objload.Result, 1)
	go func() { done <- r.Run(rctx) }()
	err = sleep(ctx, s.KillBefore)
	victim := c.MasterAddrs()[0]
	if err == nil && c.Mode() != cluster.ModeRaftless {
		victim, err = c.Leader(ctx)
	}
	var killedAt time.Time
	if err == nil {
		var i int
		if i, err = c.MasterOf(victim); err == nil {
			killedAt = time.Now()
			err = c.KillMaster(ctx, i)
		}
	}
	if err == nil {
		logf("   killed %s", victim)
		err = sleep(ctx, s.ObjectKillAfter)
	}
	stop()
	res := <-done
	if err != nil {
		return nil, err
	}
	vctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ok := &ObjectKill{Name: name, Mode: c.Mode(), Killed: victim, Acked: len(res.Puts),
		PerSec:         float64(len(res.Puts)) / res.End.Sub(res.Start).Seconds(),
		LongestAfter:   res.Longest(killedAt, res.End),
		LongestBefore:  res.Longest(res.Start, killedAt),
		FailedAttempts: len(res.Failures), Failed: res.FinalFailures(),
		Check: objload.Verify(vctx, store, res, 8)}
	ok.RaftPeers, ok.RaftState, err = raftOf(vctx, c)
	if err != nil {
		return nil, err
	}
	logf("   %s: %d objects, %.0f/s, longest PUT after the kill %v, %d failed, read back %d of %d", name, ok.Acked, ok.PerSec,
		ok.LongestAfter.Round(time.Millisecond), ok.Failed, ok.Check.ReadBack, ok.Check.Acked)
	return ok, nil
}

// raftOf reports the raft peers the cluster's live masters list and
// whether any master's -mdir holds raft state (hashicorp raft's log or
// snapshots).
func raftOf(ctx context.Context, c *cluster.Cluster) (peers int, state bool, err error) {
	cl, err := seaweed.New(seaweed.DefaultConfig(c.MasterAddrs()...))
	if err != nil {
		return 0, false, err
	}
	defer cl.Close()
	alive := c.Alive()
	for i, addr := range c.MasterAddrs() {
		if !alive[fmt.Sprintf("master%d", i+1)] {
			continue
		}
		st, err := cl.Status(ctx, addr)
		if err != nil {
			return 0, false, err
		}
		peers = max(peers, len(st.Peers))
	}
	for i := range c.MasterAddrs() {
		raft, _ := filepath.Glob(filepath.Join(c.Dir(), fmt.Sprintf("master%d", i+1), "data", "m*", "raft*"))
		snaps, _ := filepath.Glob(filepath.Join(c.Dir(), fmt.Sprintf("master%d", i+1), "data", "m*", "snapshots"))
		for _, p := range append(raft, snaps...) {
			if _, err := os.Stat(p); err == nil {
				state = true
			}
		}
	}
	return peers, state, nil
}
