package vm_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/vm/api"
)

// beforeLeases schedules every change but the leases.
var beforeLeases = []byte(`{"timestamp": 1000, "mempool": {"maxTxs": 16, "maxBytes": 1048576}, "upgrades": {"livenessGapsHeight": 0}}`)

// leaseCall runs one lease method on url in the background (it waits for
// the block that decides it) and returns its answer.
func leaseCall(t *testing.T, url, method string, args api.LeaseArgs) <-chan leaseAnswer {
	out := make(chan leaseAnswer, 1)
	go func() {
		var a leaseAnswer
		a.err = rpcCall(t, url, method, args, &a.reply)
		out <- a
	}()
	return out
}

type leaseAnswer struct {
	reply api.LeaseReply
	err   *rpcErr
}

// decide builds a block of the owner's pending lease transaction once it
// is there, and returns the call's answer.
func (nw *net) decide(owner int, call <-chan leaseAnswer) leaseAnswer {
	nw.t.Helper()
	require.Eventually(nw.t, func() bool { return nw.vms[owner].Mempool().Len() > 0 }, 10*time.Second, 5*time.Millisecond)
	_, err := nw.round(owner, 10)
	require.NoError(nw.t, err)
	select {
	case a := <-call:
		return a
	case <-time.After(10 * time.Second):
		nw.t.Fatal("the lease call did not answer after its block")
		return leaseAnswer{}
	}
}

func leaseData(t *testing.T, e *rpcErr, code int) api.LeaseData {
	t.Helper()
	require.NotNil(t, e)
	require.Equal(t, code, e.Code, e.Message)
	var d api.LeaseData
	require.NoError(t, json.Unmarshal(e.Data, &d))
	return d
}

// TestLeasesThroughTheAPI: the owner of a range grants its lease to one
// holder at a time; a holder that pauses past its TTL loses it to another,
// and its token is refused from then on, on every node.
func TestLeasesThroughTheAPI(t *testing.T) {
	require := require.New(t)
	nw := newNet(t, 3)
	nw.ready(10)
	rng := nw.rangeOf(0, "lease")
	url0 := nw.server(0)

	a := nw.decide(0, leaseCall(t, url0, "acquireLease", api.LeaseArgs{Range: rng, Holder: "shell-a", TTLMs: 10_000}))
	require.Nil(a.err)
	require.Equal("granted", a.reply.Outcome)
	require.Equal(uint64(1), a.reply.Token)
	var st api.LeaseStateReply
	require.Nil(rpcCall(t, nw.server(2), "getLease", api.RangeArgs{Range: rng}, &st))
	require.Equal(api.LeaseStateReply{Head: st.Head, Range: rng, Holder: "shell-a", Token: 1, ExpiresMs: st.AtMs + 10_000, Held: true, Fence: 1, AtMs: st.AtMs}, st,
		"the lease runs from the time of the block that granted it")
	require.Equal(a.reply.Height, st.AcceptedHeight)

	// Another holder is refused at once, from accepted state, with the
	// holder named; so is a non-owner node asked directly.
	d := leaseData(t, rpcCall(t, url0, "acquireLease", api.LeaseArgs{Range: rng, Holder: "shell-b", TTLMs: 10_000}, nil), api.CodeLeaseHeld)
	require.Equal(api.LeaseData{Range: rng, Holder: "shell-a", Token: 1, ExpiresMs: st.ExpiresMs}, d)
	e := rpcCall(t, nw.server(1), "acquireLease", api.LeaseArgs{Range: rng, Holder: "shell-b", TTLMs: 10_000}, nil)
	require.NotNil(e)
	require.Equal(api.CodeNotOwner, e.Code)

	nw.now.Add(4_000)
	r := nw.decide(0, leaseCall(t, url0, "renewLease", api.LeaseArgs{Range: rng, Holder: "shell-a", Token: 1, TTLMs: 10_000}))
	require.Nil(r.err)
	require.Equal("renewed", r.reply.Outcome)
	require.Greater(r.reply.ExpiresMs, st.ExpiresMs)

	// shell-a pauses past its TTL; shell-b takes the lease.
	nw.now.Add(30_000)
	b := nw.decide(0, leaseCall(t, url0, "acquireLease", api.LeaseArgs{Range: rng, Holder: "shell-b", TTLMs: 10_000}))
	require.Nil(b.err)
	require.Equal(uint64(2), b.reply.Token, "a new grant, a higher token")

	// shell-a resumes: its token is refused.
	d = leaseData(t, rpcCall(t, url0, "renewLease", api.LeaseArgs{Range: rng, Holder: "shell-a", Token: 1, TTLMs: 10_000}, nil), api.CodeLeaseLost)
	require.Equal("shell-b", d.Holder)
	require.Equal(uint64(2), d.Token)
	leaseData(t, rpcCall(t, url0, "releaseLease", api.LeaseArgs{Range: rng, Holder: "shell-a", Token: 1}, nil), api.CodeLeaseLost)

	rel := nw.decide(0, leaseCall(t, url0, "releaseLease", api.LeaseArgs{Range: rng, Holder: "shell-b", Token: 2}))
	require.Nil(rel.err)
	require.Equal("released", rel.reply.Outcome)
	for i := range nw.vms {
		st = api.LeaseStateReply{}
		require.Nil(rpcCall(t, nw.server(i), "getLease", api.RangeArgs{Range: rng}, &st))
		require.False(st.Held, "%+v", st)
		require.Empty(st.Holder, "%+v", st)
		require.Equal(uint64(2), st.Fence, "the fence outlives the release")
	}

	// Arguments the chain would refuse never reach a transaction.
	e = rpcCall(t, url0, "acquireLease", api.LeaseArgs{Range: rng, Holder: "two words", TTLMs: 10}, nil)
	require.NotNil(e)
	require.Equal(api.CodeInvalidParams, e.Code)
}

// TestLeasesWaitForTheirActivation: before the leases' scheduled height the
// API refuses them as not activated, and nothing is signed.
func TestLeasesWaitForTheirActivation(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, beforeLeases)
	nw.ready(10)
	rng := nw.rangeOf(0, "lease")
	e := rpcCall(t, nw.server(0), "acquireLease", api.LeaseArgs{Range: rng, Holder: "h", TTLMs: 1_000}, nil)
	require.NotNil(e)
	require.Equal(api.CodeNotReady, e.Code, e.Message)
	require.Contains(e.Message, "not activated")
	require.Zero(nw.vms[0].Mempool().Len())
}
