package execute_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// leases drives lease transactions of one range through execution, each in
// a block of its own at a given block time.
type leases struct {
	t      testing.TB
	w      *world
	e      *execute.Membership
	l      *state.Layer
	rng    string
	height uint64
}

func newLeases(t testing.TB) *leases {
	w := newWorld(t, 3)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1, 2: 1})
	_, l := freshB(t)
	return &leases{t: t, w: w, e: e, l: l, rng: "cluster/lock/admin"}
}

// do runs one lease entry at block time nowMs and returns its receipt entry.
func (s *leases) do(nowMs uint64, en txs.LeaseEntry) state.ReceiptEntry {
	s.t.Helper()
	en.Range = s.rng
	owner := s.e.Owner(s.rng)
	tx, err := s.w.byNode[owner].Sign(&txs.LeaseTx{Header: s.w.header(s.e, owner), Entries: []txs.LeaseEntry{en}})
	require.NoError(s.t, err)
	s.height++
	c := s.w.ctx(s.e, s.height)
	c.Time = nowMs
	c.Rules.Leases = true
	ch, err := execute.Tx(s.l, c, tx)
	require.NoError(s.t, err)
	require.NoError(s.t, s.l.Apply(ch))
	require.Len(s.t, ch.Receipt.Entries, 1)
	return ch.Receipt.Entries[0]
}

func acquire(holder string, ttl uint64) txs.LeaseEntry {
	return txs.LeaseEntry{Op: txs.LeaseAcquire, Holder: holder, TTLMs: ttl}
}

func renew(holder string, token, ttl uint64) txs.LeaseEntry {
	return txs.LeaseEntry{Op: txs.LeaseRenew, Holder: holder, Token: token, TTLMs: ttl}
}

func release(holder string, token uint64) txs.LeaseEntry {
	return txs.LeaseEntry{Op: txs.LeaseRelease, Holder: holder, Token: token}
}

func TestLeaseLifecycle(t *testing.T) {
	require := require.New(t)
	s := newLeases(t)
	r := s.rng

	require.Equal(state.ReceiptEntry{Range: r, Lease: state.LeaseGranted, Holder: "shell-a", Token: 1, ExpiresMs: 11_000}, s.do(1_000, acquire("shell-a", 10_000)))
	// Another holder, and the same name from another process, are refused
	// while the grant is unexpired; the receipt names the holder.
	require.Equal(state.ReceiptEntry{Range: r, Lease: state.LeaseHeld, Holder: "shell-a", Token: 1, ExpiresMs: 11_000}, s.do(2_000, acquire("shell-b", 10_000)))
	require.Equal(state.LeaseHeld, s.do(2_000, acquire("shell-a", 10_000)).Lease, "a name is not a grant")
	// Renewing moves the expiry to block time + TTL.
	require.Equal(state.ReceiptEntry{Range: r, Lease: state.LeaseRenewed, Holder: "shell-a", Token: 1, ExpiresMs: 19_000}, s.do(9_000, renew("shell-a", 1, 10_000)))
	require.Equal(state.LeaseLost, s.do(9_500, renew("shell-a", 2, 10_000)).Lease, "a token that was never granted")
	require.Equal(state.LeaseLost, s.do(9_500, renew("shell-b", 1, 10_000)).Lease, "the right token under another name")

	// shell-a pauses past its TTL: at block time 19,000 its lease expired.
	require.Equal(state.ReceiptEntry{Range: r, Lease: state.LeaseLost}, s.do(19_000, renew("shell-a", 1, 10_000)), "expired at its expiry")
	require.Equal(state.ReceiptEntry{Range: r, Lease: state.LeaseGranted, Holder: "shell-b", Token: 2, ExpiresMs: 29_500}, s.do(19_500, acquire("shell-b", 10_000)))
	// The paused holder resumes: its old token is refused for good.
	require.Equal(state.ReceiptEntry{Range: r, Lease: state.LeaseLost, Holder: "shell-b", Token: 2, ExpiresMs: 29_500}, s.do(20_000, renew("shell-a", 1, 10_000)))
	require.Equal(state.LeaseLost, s.do(20_000, release("shell-a", 1)).Lease)
	require.Equal(state.LeaseHeld, s.do(20_000, acquire("shell-a", 10_000)).Lease)

	require.Equal(state.ReceiptEntry{Range: r, Lease: state.LeaseReleased}, s.do(21_000, release("shell-b", 2)))
	lease, ok, err := s.l.Lease(r)
	require.NoError(err)
	require.False(ok, "released: %+v", lease)
	// Tokens only grow, across releases and holders.
	require.Equal(uint64(3), s.do(21_000, acquire("shell-a", 5)).Token)
	require.Equal(uint64(4), s.do(21_005, acquire("shell-b", 5)).Token, "expired at 21,005")
	fence, err := s.l.Fence(r)
	require.NoError(err)
	require.Equal(uint64(4), fence)
}

// TestLeaseNeverTwoHolders runs random acquires, renewals and releases of
// three holders, each believing what its receipts say, at random block
// times; a holder that pauses simply acts late. Whatever the order, the
// grants the chain made never overlap in block time: a holder holds from
// its grant to the last expiry a renewal gave it (or its release), and the
// next grant starts after that.
func TestLeaseNeverTwoHolders(t *testing.T) {
	s := newLeases(t)
	rnd := rand.New(rand.NewPCG(7, 11))
	type holding struct {
		holder       string
		from, until  uint64
		releasedAtMs uint64
	}
	grants := map[uint64]*holding{} // by token
	mine := map[string]uint64{}     // the token each holder believes it holds
	holders := []string{"m1", "m2", "m3"}
	now := uint64(1_000_000)
	var lastToken uint64
	for step := 0; step < 800; step++ {
		now += uint64(rnd.IntN(400))
		h := holders[rnd.IntN(len(holders))]
		ttl := uint64(100 + rnd.IntN(1_000))
		var got state.ReceiptEntry
		switch tok := mine[h]; {
		case tok == 0:
			got = s.do(now, acquire(h, ttl))
		case rnd.IntN(8) == 0:
			got = s.do(now, release(h, tok))
		default:
			got = s.do(now, renew(h, tok, ttl))
		}
		switch got.Lease {
		case state.LeaseGranted:
			require.Greater(t, got.Token, lastToken, "tokens only grow")
			lastToken = got.Token
			for tok, g := range grants {
				end := g.until
				if g.releasedAtMs != 0 {
					end = min(end, g.releasedAtMs)
				}
				require.LessOrEqual(t, end, now, "grant %d to %s at %d while grant %d of %s runs until %d", got.Token, h, now, tok, g.holder, end)
			}
			grants[got.Token] = &holding{holder: h, from: now, until: got.ExpiresMs}
			mine[h] = got.Token
		case state.LeaseRenewed:
			g := grants[mine[h]]
			require.Less(t, now, g.until, "renewed after its expiry")
			g.until = got.ExpiresMs
		case state.LeaseReleased:
			grants[mine[h]].releasedAtMs = now
			mine[h] = 0
		case state.LeaseLost:
			require.GreaterOrEqual(t, now, min(grants[mine[h]].until, nonZero(grants[mine[h]].releasedAtMs)), "a live grant was refused")
			mine[h] = 0
		case state.LeaseHeld:
			require.NotEqual(t, h, "", "held by %s", got.Holder)
		default:
			t.Fatalf("outcome %q", got.Lease)
		}
	}
	require.Greater(t, len(grants), 30, "the run should take over the lease many times")
}

func nonZero(v uint64) uint64 {
	if v == 0 {
		return ^uint64(0)
	}
	return v
}

func TestLeaseRules(t *testing.T) {
	require := require.New(t)
	s := newLeases(t)
	owner := s.e.Owner(s.rng)
	var other int
	for i, k := range s.w.keys {
		if k.NodeID != owner {
			other = i
		}
	}
	en := acquire("h", 10)
	en.Range = s.rng
	c := s.w.ctx(s.e, 1)
	c.Rules.Leases = true

	// Only the range's owner decides its lease.
	tx, err := s.w.keys[other].Sign(&txs.LeaseTx{Header: s.w.header(s.e, s.w.keys[other].NodeID), Entries: []txs.LeaseEntry{en}})
	require.NoError(err)
	_, err = execute.Tx(s.l, c, tx)
	require.ErrorIs(err, execute.ErrNotOwner)

	// Before the activation of leases, a lease transaction is refused.
	tx, err = s.w.byNode[owner].Sign(&txs.LeaseTx{Header: s.w.header(s.e, owner), Entries: []txs.LeaseEntry{en}})
	require.NoError(err)
	c.Rules.Leases = false
	_, err = execute.Tx(s.l, c, tx)
	require.ErrorIs(err, execute.ErrNotActivated)
	c.Rules.Leases = true
	_, err = execute.Tx(s.l, c, tx)
	require.NoError(err)

	// Expiry past the end of time is an error, not a wrap.
	c.Time = ^uint64(0) - 5
	_, err = execute.Tx(s.l, c, tx)
	require.ErrorIs(err, execute.ErrCounterOverflow)
}
