package schainseq

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tests/framework/apitest"
)

// clock is a lease clock a test moves by hand.
type clock struct{ ms atomic.Int64 }

func (c *clock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *clock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func newClock(chain *apitest.Net) *clock {
	c := &clock{}
	c.ms.Store(time.Now().UnixMilli())
	chain.SetLeaseClock(c.now)
	return c
}

func raftlessMaster(t *testing.T, chain *apitest.Net, self string, tune func(*Config)) *SChain {
	cfg := testConfig(chain, TypeRaftless)
	cfg.Masters = 3
	if tune != nil {
		tune(&cfg)
	}
	s, err := newSChain(cfg, self, testLog(t))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestLeadsByMode(t *testing.T) {
	chain := newChain(t, 1)
	leaderless := newTestSChain(t, chain, leaderlessConfig(chain))
	raftless := raftlessMaster(t, chain, "127.0.0.1:9333.19333", nil)
	stock := &memSeq{}
	follower := func() bool { return false }
	for _, op := range Ops() {
		require.False(t, Leads(stock, op, follower), "stock follows raft: %v", op)
		require.Equal(t, EveryLeaderlessMaster(op), Leads(leaderless, op, follower), "leaderless: %v", op)
		require.True(t, Leads(raftless, op, follower), "raftless: every master, %v", op)
		require.True(t, Leads(stock, op, func() bool { return true }), "the raft leader: %v", op)
	}
	require.Equal(t, OpAssign, HTTPOp("/dir/assign"))
	require.Equal(t, OpStatus, HTTPOp("/dir/status"))
	require.Equal(t, OpClients, HTTPOp("/vol/grow"))
	require.True(t, Leaderless(raftless), "a raftless master is leaderless too")
	require.False(t, Raftless(leaderless))
}

func TestRaftlessMastersNameThemselves(t *testing.T) {
	chain := newChain(t, 1)
	m1 := raftlessMaster(t, chain, "127.0.0.1:9333.19333", nil)
	m2 := raftlessMaster(t, chain, "127.0.0.1:9334.19334", nil)
	self, ok := Self(m1)
	require.True(t, ok)
	require.Equal(t, "127.0.0.1:9333.19333", self)
	_, ok = Self(newTestSChain(t, chain, leaderlessConfig(chain)))
	require.False(t, ok, "a leaderless master follows raft")

	id1, ok := TopologyId(m1)
	require.True(t, ok)
	id2, _ := TopologyId(m2)
	require.Equal(t, id1, id2, "every master of the cluster has the chain's topology id")
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, id1)
	other := raftlessMaster(t, chain, "127.0.0.1:9335.19335", func(c *Config) { c.Prefix = "another-cluster" })
	id3, _ := TopologyId(other)
	require.NotEqual(t, id1, id3, "another cluster, another id")
}

// TestRaftlessAdminLock: the admin lock is one S-Chain lease whichever
// master a shell asks; a shell paused past the TTL loses it, its token is
// refused from then on, and the next holder gets a higher one.
func TestRaftlessAdminLock(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	clk := newClock(chain)
	m1 := raftlessMaster(t, chain, "127.0.0.1:9333.19333", nil)
	m2 := raftlessMaster(t, chain, "127.0.0.1:9334.19334", nil)
	ctx := context.Background()

	tokA, tsA, ok, err := LeaseAdminToken(ctx, m1, "shell", "10.0.0.5", 0)
	require.True(ok)
	require.NoError(err)
	require.Positive(tokA)
	require.InDelta(time.Now().UnixNano(), tsA, float64(time.Minute))
	_, _, _, err = LeaseAdminToken(ctx, m2, "shell", "10.0.0.6", 0)
	require.ErrorContains(err, "already locked by 10.0.0.5")
	_, _, _, err = LeaseAdminToken(ctx, m2, "shell", "10.0.0.5", 0)
	require.ErrorContains(err, "already locked", "a second shell of the same host is refused too")

	clk.add(8 * time.Second)
	renewed, _, _, err := LeaseAdminToken(ctx, m2, "shell", "10.0.0.5", tokA)
	require.NoError(err, "a renewal may go to any master")
	require.Equal(tokA, renewed)
	holder, locked, ok, err := AdminLockStatus(ctx, m1, "shell")
	require.True(ok)
	require.NoError(err)
	require.True(locked)
	require.Equal("10.0.0.5", holder)

	// Shell A pauses past the TTL (10 s after its renewal).
	clk.add(10 * time.Second)
	_, locked, _, err = AdminLockStatus(ctx, m1, "shell")
	require.NoError(err)
	require.False(locked)
	tokB, _, _, err := LeaseAdminToken(ctx, m1, "shell", "10.0.0.6", 0)
	require.NoError(err)
	require.Greater(tokB, tokA, "fencing tokens only grow")
	_, _, _, err = LeaseAdminToken(ctx, m2, "shell", "10.0.0.5", tokA)
	require.ErrorIs(err, ErrLockLost, "A resumes: its token is refused")
	ok, err = ReleaseAdminToken(ctx, m2, "shell", tokA)
	require.True(ok)
	require.NoError(err)
	_, locked, _, _ = AdminLockStatus(ctx, m2, "shell")
	require.True(locked, "A's release of its old token leaves B's lock alone")
	_, err = ReleaseAdminToken(ctx, m2, "shell", tokB)
	require.NoError(err)
	_, locked, _, _ = AdminLockStatus(ctx, m1, "shell")
	require.False(locked)

	// Any other master keeps stock's lock.
	_, _, ok, _ = LeaseAdminToken(ctx, newTestSChain(t, chain, leaderlessConfig(chain)), "shell", "x", 0)
	require.False(ok)
}

// TestRaftlessVacuumHold: one master at a time holds a volume's vacuum; a
// master paused past the TTL finds its hold gone before it would commit,
// and another master takes it with a higher token.
func TestRaftlessVacuumHold(t *testing.T) {
	require := require.New(t)
	chain := newChain(t, 3)
	clk := newClock(chain)
	fast := func(c *Config) { c.VacuumTTL = time.Second }
	m1 := raftlessMaster(t, chain, "127.0.0.1:9333.19333", fast)
	m2 := raftlessMaster(t, chain, "127.0.0.1:9334.19334", fast)

	h1, ok := HoldVacuum(m1, 7)
	require.True(ok)
	_, ok = HoldVacuum(m2, 7)
	require.False(ok, "volume 7 is m1's to vacuum")
	h8, ok := HoldVacuum(m2, 8)
	require.True(ok, "another volume, another lease")
	h8.Release()
	l, held := chain.Lease(VacuumRange("seaweedfs", 8))
	require.False(held, "released: %+v", l)

	// m1's renewals keep the hold while time passes.
	require.Eventually(func() bool { return chain.Calls("renewLease") >= 2 }, 10*time.Second, 10*time.Millisecond)
	require.True(h1.Held())

	// m1 pauses: its lease runs out on the chain's clock.
	clk.add(2 * time.Second)
	h2, ok := HoldVacuum(m2, 7)
	require.True(ok, "the lease expired: m2 takes the volume")
	require.False(h1.Held(), "m1 resumes and must not commit")
	l, held = chain.Lease(VacuumRange("seaweedfs", 7))
	require.True(held)
	require.Equal("127.0.0.1:9334.19334", l.Holder)
	h1.Release() // nothing left to release
	l, held = chain.Lease(VacuumRange("seaweedfs", 7))
	require.True(held, "m1's release leaves m2's hold alone: %+v", l)
	h2.Release()

	// Any other master holds nothing: raft's leader vacuums there.
	h, ok := HoldVacuum(newTestSChain(t, chain, leaderlessConfig(chain)), 9)
	require.True(ok)
	require.True(h.Held())
	h.Release()
}

func TestLeaseErrorsClassify(t *testing.T) {
	held := &LeaseError{Held: true, Standing: Lease{Range: "r", Holder: "h", Token: 3}}
	require.ErrorIs(t, held, ErrLeaseHeld)
	require.False(t, errors.Is(held, ErrLeaseLost))
	require.ErrorIs(t, &LeaseError{Standing: Lease{Range: "r"}}, ErrLeaseLost)
	require.Equal(t, "seaweedfs/lock/a_b_c", LockRange("seaweedfs", "a/b c"))
}
