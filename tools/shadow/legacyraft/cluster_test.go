package legacyraft_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow/legacy"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
	"github.com/s-chain/schain/tools/shadow/legacyraft/legacyrafttest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), legacyrafttest.WaitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// allocateEventually retries a retryable failure until an allocation succeeds.
func allocateEventually(t *testing.T, c *legacyrafttest.Cluster, a legacy.Allocator, rangeKey string, count uint64) legacy.Result {
	t.Helper()
	var res legacy.Result
	c.Eventually(func() bool {
		var err error
		res, err = a.Allocate(testCtx(t), rangeKey, count)
		require.True(t, err == nil || errors.Is(err, legacy.ErrUnavailable), "unexpected error %v", err)
		return err == nil
	}, "allocate %s", rangeKey)
	return res
}

func TestSeaweedFSReissuesAfterLeaderChange(t *testing.T) {
	require := require.New(t)
	cfg := legacyrafttest.FastConfig()
	cfg.WarmUp = 100 * time.Millisecond
	c := legacyrafttest.Start(t, 3, cfg)
	client := c.Client()

	leader := c.WaitLeader(0)
	first := allocateEventually(t, c, client, "r", 10)
	require.Equal(uint64(1), first.First, "a fresh SeaweedFS sequencer starts at 1")
	second := allocateEventually(t, c, client, "r", 10)
	require.Equal(uint64(11), second.First)
	require.Equal(first.Term, second.Term)
	require.NoError(client.ReportWritten(testCtx(t), "r", 15)) // 16..20 assigned, never written

	c.Kill(leader)
	c.WaitLeader(0)
	// The new leader learns the written max from the next heartbeat only.
	require.NoError(client.ReportWritten(testCtx(t), "r", 15))
	after := allocateEventually(t, c, client, "r", 10)
	require.Greater(after.Term, first.Term)
	require.Equal(uint64(16), after.First, "keys 16..20 are reissued: the counter was not durable")
}

func TestSeaweedFSWarmUp(t *testing.T) {
	cfg := legacyrafttest.FastConfig()
	cfg.WarmUp = time.Hour
	c := legacyrafttest.Start(t, 1, cfg)
	c.WaitLeader(0)
	_, err := c.Node(0).Allocate(testCtx(t), "r", 1)
	require.ErrorIs(t, err, legacyraft.ErrWarmingUp)
	require.ErrorIs(t, err, legacy.ErrUnavailable)
}

func TestReplicatedNoReissueAcrossLeaderChange(t *testing.T) {
	require := require.New(t)
	c := legacyrafttest.Start(t, 3, withMode(legacyraft.ModeReplicated))
	client := c.Client()
	leader := c.WaitLeader(0)
	before := allocateEventually(t, c, client, "r", 10)
	c.Kill(leader)
	c.WaitLeader(0)
	after := allocateEventually(t, c, client, "r", 10)
	require.Greater(after.Term, before.Term)
	require.GreaterOrEqual(after.First, before.End())

	c.Restart(leader)
	c.WaitLeader(0)
	again := allocateEventually(t, c, c.Node(leader), "r", 1)
	require.GreaterOrEqual(again.First, after.End())
}

func TestSlotsGroupsAreIndependent(t *testing.T) {
	require := require.New(t)
	const groups = 4
	cfg := withMode(legacyraft.ModeSlots)
	cfg.Groups = groups
	c := legacyrafttest.Start(t, 3, cfg)
	for g := range groups {
		c.WaitLeader(g)
	}
	node := c.Node(0)
	ranges := rangesPerGroup(t, node, groups)
	for _, r := range ranges {
		allocateEventually(t, c, c.Client(), r, 1)
	}

	const dark = 2
	c.IsolateGroup(dark)
	c.WaitNoLeader(dark)
	for g, r := range ranges {
		if g == dark {
			continue
		}
		res := allocateEventually(t, c, c.Client(), r, 5)
		require.Greater(res.First, uint64(1), "group %d keeps allocating", g)
	}
	for i := range c.Size() {
		_, err := c.Node(i).Allocate(testCtx(t), ranges[dark], 1)
		require.ErrorIs(err, legacy.ErrUnavailable, "node %d must not fall back to another group", i)
	}

	c.Heal()
	c.WaitLeader(dark)
	res := allocateEventually(t, c, c.Client(), ranges[dark], 1)
	require.Equal(uint64(2), res.First)
}

func TestSlotsMissingRoute(t *testing.T) {
	cfg := withMode(legacyraft.ModeSlots)
	cfg.Groups = 2
	c := legacyrafttest.Start(t, 1, cfg)
	c.WaitLeader(0)
	c.WaitLeader(1)
	n := c.Node(0)
	n.SetRoutes(n.Routes().WithoutSlot(legacyraft.Slot("r")))
	_, err := n.Allocate(testCtx(t), "r", 1)
	require.ErrorIs(t, err, legacyraft.ErrNoRoute)
	require.ErrorIs(t, err, legacy.ErrUnavailable)
}

func TestSlotsBatchesConcurrentAllocations(t *testing.T) {
	require := require.New(t)
	cfg := withMode(legacyraft.ModeSlots)
	cfg.Groups = 1
	cfg.BatchMaxWait = 5 * time.Millisecond
	c := legacyrafttest.Start(t, 1, cfg) // one node still goes through raft
	c.WaitLeader(0)
	n := c.Node(0)
	startIndex := n.Raft(0).LastIndex()
	const workers = 64
	results := make(chan legacy.Result, workers)
	for range workers {
		go func() {
			res, err := n.Allocate(testCtx(t), "r", 1)
			if err != nil {
				res = legacy.Result{}
			}
			results <- res
		}()
	}
	seen := map[uint64]bool{}
	for range workers {
		res := <-results
		require.NotZero(res.First)
		require.False(seen[res.First])
		seen[res.First] = true
	}
	require.Less(n.Raft(0).LastIndex()-startIndex, uint64(workers), "allocations were batched into fewer entries")
}

func TestFollowerForwardsToLeader(t *testing.T) {
	require := require.New(t)
	c := legacyrafttest.Start(t, 3, legacyrafttest.FastConfig())
	leader := c.WaitLeader(0)
	follower := (leader + 1) % 3
	followerOnly := legacyraft.NewClient([]string{c.Addrs()[follower]}, 5*time.Second)

	res := allocateEventually(t, c, followerOnly, "r", 3)
	require.Equal(c.Node(leader).ID(), res.Leader, "the leader served the forwarded request")

	resp, err := http.Get("http://" + c.Addrs()[follower] + "/status")
	require.NoError(err)
	require.NoError(resp.Body.Close())
	require.Equal(http.StatusOK, resp.StatusCode)
	require.Equal(c.Node(leader).ID(), c.Node(follower).Status().Leader)

	c.StopHTTP(leader)
	_, err = c.Node(follower).Allocate(testCtx(t), "r", 1)
	require.ErrorIs(err, legacy.ErrUnavailable)
	require.Equal(c.Addrs()[leader], legacy.LeaderHint(err))
	var nl *legacy.NotLeaderError
	require.ErrorAs(err, &nl)
	require.Equal(c.Node(leader).ID(), nl.LeaderID)
	require.Error(nl.Cause, "the forwarding failure is kept")

	// The same answer on the wire, as a client of the follower sees it.
	_, err = followerOnly.Allocate(testCtx(t), "r", 1)
	require.ErrorIs(err, legacy.ErrUnavailable)
	resp, err = http.Post("http://"+c.Addrs()[follower]+"/allocate?range=r&count=1", "", nil)
	require.NoError(err)
	var body struct{ Kind, Leader string }
	require.NoError(json.NewDecoder(resp.Body).Decode(&body))
	require.NoError(resp.Body.Close())
	require.Equal(http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal("not_leader", body.Kind)
	require.Equal(c.Addrs()[leader], body.Leader)
}

func TestRejectedRequests(t *testing.T) {
	c := legacyrafttest.Start(t, 1, legacyrafttest.FastConfig())
	c.WaitLeader(0)
	client := c.Client()
	for _, tc := range []struct {
		name  string
		rng   string
		count uint64
	}{{"empty range", "", 1}, {"zero count", "r", 0}, {"huge count", "r", 1 << 40}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Allocate(testCtx(t), tc.rng, tc.count)
			require.ErrorIs(t, err, legacy.ErrRejected)
		})
	}
}

func TestBoltDBSurvivesRestart(t *testing.T) {
	require := require.New(t)
	dir := t.TempDir()
	cfg := legacyrafttest.FastConfig()
	cfg.Mode, cfg.Dir = legacyraft.ModeReplicated, dir
	inmem := func() legacyraft.Options {
		return legacyraft.Options{
			Transport: func(_ int, addr raft.ServerAddress) (raft.Transport, error) {
				_, tr := raft.NewInmemTransport(addr)
				return tr, nil
			},
			Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Off}),
		}
	}
	var first legacy.Result
	for round := range 2 {
		n, err := legacyraft.New(cfg, inmem())
		require.NoError(err)
		require.Eventually(func() bool { return n.IsLeader(0) }, legacyrafttest.WaitTimeout, 5*time.Millisecond)
		res, err := n.Allocate(testCtx(t), "r", 10)
		require.NoError(err)
		if round == 0 {
			first = res
			require.NoError(n.Raft(0).Snapshot().Error())
		} else {
			require.Equal(first.End(), res.First, "counter restored from boltdb")
		}
		require.NoError(n.Close())
	}
}

func withMode(m legacyraft.Mode) legacyraft.Config {
	cfg := legacyrafttest.FastConfig()
	cfg.Mode = m
	return cfg
}

// rangesPerGroup finds one range key per group under node's routes.
func rangesPerGroup(t *testing.T, node *legacyraft.Node, groups int) map[int]string {
	out := map[int]string{}
	for i := 0; len(out) < groups; i++ {
		key := "range-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		g, ok := node.GroupOf(key)
		require.True(t, ok)
		if _, dup := out[g]; !dup {
			out[g] = key
		}
	}
	return out
}
