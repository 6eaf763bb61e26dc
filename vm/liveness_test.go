package vm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/pinning"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/builder"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/writer"
)

// livenessGenesis: 10 s liveness rounds, a heartbeat lasts K=1 epoch.
var livenessGenesis = []byte(`{"timestamp": 1000, "roundDurationMs": 10000, "livenessRounds": 1, "mempool": {"maxTxs": 64, "maxBytes": 1048576}}`)

// enterRound moves every VM's clock into liveness round r.
func (nw *net) enterRound(r int64) { nw.now.Store(r*10_000 + 5000) }

// heartbeats has the VMs in alive send their heartbeat for the current
// epoch, gossips them, and has proposer put them in a block.
func (nw *net) heartbeats(proposer int, alive ...int) {
	for _, i := range alive {
		tx, err := nw.vms[i].Writer().Heartbeat(context.Background())
		require.NoError(nw.t, err)
		require.NotNil(nw.t, tx, "vm %d had no heartbeat to send", i)
		nw.gossip(i, tx)
	}
	b, err := nw.round(proposer, 10)
	require.NoError(nw.t, err)
	require.Len(nw.t, b.Txs, len(alive))
	for _, tx := range b.Txs {
		require.Equal(nw.t, "heartbeat", tx.Kind())
	}
}

func (nw *net) snapshot(i int) *execute.Membership {
	e, err := nw.vms[i].Chain().Snapshot(context.Background())
	require.NoError(nw.t, err)
	return e
}

// allocateVia has node i allocate count ids of rk, puts the tx in a block
// proposed by i and returns the reserved interval.
func (nw *net) allocateVia(i int, rk string, count uint64) [2]uint64 {
	tx, err := nw.vms[i].Writer().Allocate(context.Background(), []txs.AllocateEntry{{Range: rk, Count: count}})
	require.NoError(nw.t, err)
	nw.gossip(i, tx)
	_, err = nw.round(i, 10)
	require.NoError(nw.t, err)
	rc, err := nw.vms[0].Chain().State().Receipt(tx.ID())
	require.NoError(nw.t, err, "allocation of %s via vm %d accepted", rk, i)
	return [2]uint64{rc.Entries[0].Base, rc.Entries[0].Base + rc.Entries[0].Count}
}

// TestDeadOwnerRangesMove stops one validator's heartbeats: K+1 epochs
// after its last heartbeat its ranges move to their next HRW candidate and
// no other range moves; the counters continue from committed state; once it
// heartbeats again it regains exactly its ranges, and no id is ever issued
// twice.
func TestDeadOwnerRangesMove(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, livenessGenesis)
	const dead = 2
	nw.enterRound(0)
	nw.ready(10)

	full := nw.snapshot(0)
	require.Equal(3, full.Len())
	require.False(full.Record().Fallback)
	ranges := make([]string, 90)
	before := map[string]ids.NodeID{}
	for k := range ranges {
		ranges[k] = fmt.Sprintf("live-%03d", k)
		before[ranges[k]] = full.Owner(ranges[k])
	}
	var deadRanges []string
	for _, rk := range ranges {
		if before[rk] == nw.keys[dead].NodeID {
			deadRanges = append(deadRanges, rk)
		}
	}
	require.NotEmpty(deadRanges)
	issued := map[string][][2]uint64{}
	for _, rk := range deadRanges[:3] {
		issued[rk] = append(issued[rk], nw.allocateVia(dead, rk, 5))
	}

	// Epochs 1 and 2: everyone heartbeats; the membership stays full.
	for r := int64(1); r <= 2; r++ {
		nw.enterRound(r)
		nw.heartbeats(0, 0, 1, 2)
		require.Equal(full.Members(), nw.snapshot(0).Members(), "epoch %d", r)
	}
	// Epoch 3: the dead node's last heartbeat (epoch 2) still counts (K=1).
	nw.enterRound(3)
	nw.heartbeats(0, 0, 1)
	require.Equal(3, nw.snapshot(1).Len(), "a heartbeat lasts K=1 epoch")
	// Epoch 4: its ranges move, and only its ranges.
	nw.enterRound(4)
	nw.heartbeats(0, 0, 1)
	for i := range nw.vms {
		e := nw.snapshot(i)
		require.Equal(2, e.Len(), "vm %d: the dead validator left the members", i)
		_, in := e.Weight(nw.keys[dead].NodeID)
		require.False(in)
	}
	after := nw.snapshot(0)
	live := []pinning.Member{}
	for _, m := range full.Members() {
		if m.NodeID != nw.keys[dead].NodeID {
			live = append(live, m)
		}
	}
	moved := 0
	for _, rk := range ranges {
		now := after.Owner(rk)
		if before[rk] != nw.keys[dead].NodeID {
			require.Equal(before[rk], now, "range %s moved although its owner is alive", rk)
			continue
		}
		want, err := pinning.Owner(rk, live)
		require.NoError(err)
		require.Equal(want, now, "range %s goes to its next HRW candidate", rk)
		moved++
	}
	require.Equal(len(deadRanges), moved)

	// The new owners continue from committed counters.
	for _, rk := range deadRanges[:3] {
		owner := indexOf(nw, after.Owner(rk))
		iv := nw.allocateVia(owner, rk, 7)
		require.Equal(issued[rk][len(issued[rk])-1][1], iv[0], "range %s continues where the dead owner stopped", rk)
		issued[rk] = append(issued[rk], iv)
	}
	// The dead node cannot write its old ranges any more: its own view
	// follows the chain.
	_, err := nw.vms[dead].Writer().Allocate(context.Background(), []txs.AllocateEntry{{Range: deadRanges[0], Count: 1}})
	var noe *execute.NotOwnerError
	require.ErrorAs(err, &noe)

	// It comes back: its heartbeat lands in epoch 5; from epoch 6 it owns
	// its ranges again.
	nw.enterRound(5)
	nw.heartbeats(0, 0, 1, dead)
	require.Equal(2, nw.snapshot(0).Len(), "a heartbeat counts from the next epoch")
	nw.enterRound(6)
	nw.heartbeats(1, 0, 1, dead)
	back := nw.snapshot(0)
	require.Equal(3, back.Len())
	for _, rk := range ranges {
		require.Equal(before[rk], back.Owner(rk), "range %s", rk)
	}
	require.NotEqual(full.Fingerprint(), back.Fingerprint(), "same set, new generation: transactions of the old one stay dead")
	for _, rk := range deadRanges[:3] {
		issued[rk] = append(issued[rk], nw.allocateVia(dead, rk, 3))
	}
	for rk, ivs := range issued {
		for i := 1; i < len(ivs); i++ {
			require.LessOrEqual(ivs[i-1][1], ivs[i][0], "range %s: %v overlaps %v", rk, ivs[i-1], ivs[i])
		}
		require.Equal(ivs[len(ivs)-1][1], counter(t, nw.vms[1], rk))
	}
}

func indexOf(nw *net, id ids.NodeID) int {
	for i, k := range nw.keys {
		if k.NodeID == id {
			return i
		}
	}
	nw.t.Fatalf("unknown node %s", id)
	return -1
}

// TestNobodyLiveFallsBackToAll: when no validator heartbeats while blocks
// are built, ranges stay pinned to the whole set instead of to nobody.
func TestNobodyLiveFallsBackToAll(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, livenessGenesis)
	nw.enterRound(0)
	nw.ready(10)
	full := nw.snapshot(0)
	rk := nw.rangeOf(0, "fallback")
	// Rounds 1 and 2 have blocks, none with a heartbeat: the grace of round
	// 0 lasts through round 1 (K=1), and in round 2 nobody is live.
	var tx *txs.Tx
	for r := int64(1); r <= 2; r++ {
		nw.enterRound(r)
		var err error
		tx, err = nw.vms[0].Writer().Allocate(context.Background(), []txs.AllocateEntry{{Range: rk, Count: 1}})
		require.NoError(err)
		nw.gossip(0, tx)
		_, err = nw.round(0, 10)
		require.NoError(err)
	}
	e := nw.snapshot(1)
	require.True(e.Record().Fallback)
	require.Equal(full.Members(), e.Members())
	_, err := nw.vms[0].Chain().State().Receipt(tx.ID())
	require.NoError(err)
}

// TestHeartbeatOncePerEpoch: a second heartbeat in one epoch is not sent,
// and a forged duplicate is refused by execution.
func TestHeartbeatOncePerEpoch(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, livenessGenesis)
	// A build that finds only refused work says ErrNoWork; with ticks it
	// would build an empty block (the clock is past the rounds' middle).
	nw.vms[1].Builder().NoTicks()
	nw.enterRound(0)
	nw.ready(10)
	nw.enterRound(1)
	nw.heartbeats(0, 0)
	tx, err := nw.vms[0].Writer().Heartbeat(context.Background())
	require.NoError(err)
	require.Nil(tx, "already recorded for this epoch")

	forged, err := nw.keys[0].Sign(&txs.HeartbeatTx{
		Header: txs.Header{NetworkID: 5, ChainID: chainID, PChainHeight: 10, Owner: nw.keys[0].NodeID, Nonce: 1 << 40, Round: 1},
	})
	require.NoError(err)
	require.NoError(nw.vms[1].Writer().SubmitTx(forged), "admission checks pins and the signature, not state")
	_, err = nw.round(1, 10)
	require.ErrorIs(err, builder.ErrNoWork, "execution refuses a second heartbeat in one epoch")
	rc, err := nw.vms[1].Writer().Receipt(forged.ID())
	require.NoError(err)
	require.Contains(rc.Error, execute.ErrDuplicateHeartbeat.Error())

	// A heartbeat of a past epoch is refused as well.
	nw.enterRound(2)
	old, err := nw.keys[1].Sign(&txs.HeartbeatTx{
		Header: txs.Header{NetworkID: 5, ChainID: chainID, PChainHeight: 10, Owner: nw.keys[1].NodeID, Nonce: 1 << 41, Round: 1},
	})
	require.NoError(err)
	require.NoError(nw.vms[1].Writer().SubmitTx(old))
	_, err = nw.round(1, 10)
	require.ErrorIs(err, builder.ErrNoWork)
	rc, err = nw.vms[1].Writer().Receipt(old.ID())
	require.NoError(err)
	require.Contains(rc.Error, execute.ErrWrongRound.Error())
}

// TestMembershipChangeRepinsPendingWork: an allocation signed against one
// membership and still pending when another membership comes into force is
// dead (its fingerprint covers the generation); its owner re-signs it for
// the new membership and the request completes exactly once.
func TestMembershipChangeRepinsPendingWork(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newSilencedNet(t)

	// Node 0 signs in epoch 3, against the full membership, one of the
	// ranges it keeps when 2 leaves.
	var rk string
	for k := 0; ; k++ {
		rk = fmt.Sprintf("repin-%03d", k)
		if nw.snapshot(0).Owner(rk) == nw.keys[0].NodeID {
			break
		}
	}
	before := nw.snapshot(0)
	old, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 4}})
	require.NoError(err)
	require.Equal(before.Fingerprint(), old.Unsigned.Head().Fingerprint)

	// Epoch 4 opens without 2: the pending transaction is stale, and the
	// block that puts the new membership in force is built for it.
	nw.enterRound(4)
	b, err := nw.round(0, 10)
	require.NoError(err)
	require.Empty(b.Txs, "the stale allocation cannot go into a block of the new membership")
	require.Equal(2, nw.snapshot(0).Len())
	nw.requireRepinned(old)
	require.Equal(uint64(4), counter(t, nw.vms[1], rk), "allocated once")
}

// TestHeartbeatAhead: heartbeats sent ahead of their round wait in every
// pool and land in the round's first block, so a round with a single block
// keeps every live validator a member (K=1), and the builder does not put
// them in a block of the round before.
func TestHeartbeatAhead(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNetWith(t, 3, livenessGenesis)
	nw.enterRound(0)
	nw.ready(10)
	nw.enterRound(1)
	nw.heartbeats(0, 0, 1, 2)

	nw.now.Store(2*10_000 - 500) // the last half second of round 1
	for i, v := range nw.vms {
		tx, err := v.Writer().HeartbeatAhead(ctx)
		require.NoError(err)
		require.NotNil(tx)
		require.Equal(uint64(2), tx.Unsigned.Head().Round)
		nw.gossip(i, tx)
		again, err := v.Writer().HeartbeatAhead(ctx)
		require.NoError(err)
		require.Nil(again, "one per round")
	}
	_, err := nw.round(1, 10)
	require.ErrorIs(err, builder.ErrNoWork, "round 2's heartbeats cannot go into a block of round 1")

	// Round 2 has one block, built at once: it carries all three.
	nw.now.Store(2 * 10_000)
	b, err := nw.round(2, 10)
	require.NoError(err)
	require.Len(b.Txs, 3)
	for i, v := range nw.vms {
		tx, err := v.Writer().Heartbeat(ctx)
		require.NoError(err)
		require.Nil(tx, "vm %d: round 2's heartbeat already landed", i)
	}
	// Round 3 opens with all three members (K=1: the heartbeats of round
	// 2 count).
	nw.now.Store(3 * 10_000)
	rk := nw.rangeOf(0, "ahead")
	nw.allocateVia(0, rk, 1)
	require.Equal(3, nw.snapshot(1).Len())
	require.False(nw.snapshot(1).Record().Fallback)
}

// newHeartbeatingNet is 3 VMs on livenessGenesis that all heartbeated in
// rounds 1 and 2.
func newHeartbeatingNet(t *testing.T) *net { return newHeartbeatingNetWith(t, nil) }

// newHeartbeatingNetWith is newHeartbeatingNet whose VMs run with chain
// config cc.
func newHeartbeatingNetWith(t *testing.T, cc *config.ChainConfig) *net {
	nw := newConfiguredNet(t, 3, livenessGenesis, cc)
	nw.enterRound(0)
	nw.ready(10)
	for r := int64(1); r <= 2; r++ {
		nw.enterRound(r)
		nw.heartbeats(0, 0, 1, 2)
	}
	return nw
}

// newSilencedNet is newHeartbeatingNet whose validator 2 then falls silent:
// it still counts in round 3, where the net is left, and the first block of
// round 4 drops it (K=1).
func newSilencedNet(t *testing.T) *net { return newSilencedNetWith(t, nil) }

// newSilencedNetWith is newSilencedNet whose VMs run with chain config cc.
func newSilencedNetWith(t *testing.T, cc *config.ChainConfig) *net {
	nw := newHeartbeatingNetWith(t, cc)
	nw.enterRound(3)
	nw.heartbeats(0, 0, 1)
	return nw
}

// movingRanges finds n ranges of validator dead that all move to one heir
// once it leaves the membership, and that heir.
func movingRanges(t *testing.T, nw *net, dead, n int) (int, []string) {
	full := nw.snapshot(0)
	var live []pinning.Member
	for _, m := range full.Members() {
		if m.NodeID != nw.keys[dead].NodeID {
			live = append(live, m)
		}
	}
	heir := -1
	var moving []string
	for k := 0; len(moving) < n && k < 1000; k++ {
		rk := fmt.Sprintf("arrive-%03d", k)
		if full.Owner(rk) != nw.keys[dead].NodeID {
			continue
		}
		to, err := pinning.Owner(rk, live)
		require.NoError(t, err)
		if heir == -1 {
			heir = indexOf(nw, to)
		}
		if indexOf(nw, to) == heir {
			moving = append(moving, rk)
		}
	}
	require.Len(t, moving, n)
	return heir, moving
}

// within receives what, from ch, failing the test after 10 s.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
		panic("unreachable")
	}
}

// openingProcessing has proposer build the block that opens round's
// membership from alive's heartbeats, and every VM verify it without
// accepting it: a block then processes above the last accepted one, so a
// request for a range that moves with it cannot be bound to the next
// height and waits for it (writer.OpeningWait). It returns each VM's
// instance of the block; acceptOpening accepts them.
func (nw *net) openingProcessing(proposer int, alive ...int) []snowman.Block {
	ctx := context.Background()
	for _, i := range alive {
		tx, err := nw.vms[i].Writer().Heartbeat(ctx)
		require.NoError(nw.t, err)
		nw.gossip(i, tx)
	}
	last, err := nw.vms[proposer].LastAccepted(ctx)
	require.NoError(nw.t, err)
	pc := &snowblock.Context{PChainHeight: 10}
	for _, v := range nw.vms {
		require.NoError(nw.t, v.SetPreferenceWithContext(ctx, last, pc))
	}
	b, err := nw.vms[proposer].BuildBlockWithContext(ctx, pc)
	require.NoError(nw.t, err)
	require.True(nw.t, b.(*chain.Block).Changed(), "the block opens a new membership")
	return nw.deliver(b, 10)
}

// acceptOpening accepts what openingProcessing built, everywhere.
func (nw *net) acceptOpening(bs []snowman.Block) {
	acceptAll(nw.t, bs)
	nw.prefer(bs[0].ID())
}

// TestFloodOfArrivingRangesIsBounded: requests for a range about to move
// to a node wait on it for the opening block, each holding one of its
// token's pending slots. A token that floods such requests gets at most
// MaxPendingPerToken of them waiting; the rest are refused at once
// (TooManyRequests with a retry hint) without reaching the writer, and
// another token still writes its own ranges meanwhile. Once the opening
// block is accepted the waiting ones are answered and the slots free.
func TestFloodOfArrivingRangesIsBounded(t *testing.T) {
	require := require.New(t)
	tokA, tokB, cc := twoTokens(t, 4)
	nw := newSilencedNetWith(t, &cc)
	const dead = 2
	heir, moving := movingRanges(t, nw, dead, 1)
	nw.enterRound(4) // the next block drops the dead validator
	opening := nw.openingProcessing(0, 0, 1)
	h, err := nw.vms[heir].Handler()
	require.NoError(err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	waits := func() float64 { return gathered(t, nw.regs[heir], "opening_waits") }

	held := make(chan *rpcErr, cc.MaxPendingPerToken)
	for i := 0; i < cc.MaxPendingPerToken; i++ {
		go func() {
			e, _ := authCall(t, srv.URL, bearerOf(tokA), "allocate", api.AllocateArgs{Range: moving[0], Count: 1}, nil)
			held <- e
		}()
	}
	require.Eventually(func() bool { return waits() == float64(cc.MaxPendingPerToken) }, 10*time.Second, 2*time.Millisecond,
		"alpha's first requests wait on the opening block")

	const flood = 40
	refused := make(chan *rpcErr, flood)
	for i := 0; i < flood; i++ {
		go func() {
			e, _ := authCall(t, srv.URL, bearerOf(tokA), "allocate", api.AllocateArgs{Range: moving[0], Count: 1}, nil)
			refused <- e
		}()
	}
	for i := 0; i < flood; i++ {
		e := <-refused
		require.NotNil(e)
		require.Equal(api.CodeTooManyRequests, e.Code)
		var d api.RetryData
		require.NoError(json.Unmarshal(e.Data, &d))
		require.Positive(d.RetryAfterMs)
	}
	require.Equal(float64(cc.MaxPendingPerToken), waits(), "the flood added no waiter")
	select {
	case e := <-held:
		t.Fatalf("a waiting request answered before the opening block: %v", e)
	default:
	}

	// Another token writes a range the heir already owns meanwhile.
	own := ""
	for k := 0; own == "" && k < 1000; k++ {
		if rk := fmt.Sprintf("own-%03d", k); nw.snapshot(0).Owner(rk) == nw.keys[heir].NodeID {
			own = rk
		}
	}
	e, _ := authCall(t, srv.URL, bearerOf(tokB), "allocate", api.AllocateArgs{Range: own, Count: 1}, nil)
	require.Nil(e, "beta is not starved by alpha's waiting requests")

	nw.acceptOpening(opening)
	for i := 0; i < cc.MaxPendingPerToken; i++ {
		select {
		case e := <-held:
			require.Nil(e, "signed once the opening block is accepted")
		case <-time.After(10 * time.Second):
			t.Fatal("a waiting request did not answer after the opening block")
		}
	}
	require.Zero(waits())
	e, _ = authCall(t, srv.URL, bearerOf(tokA), "allocate", api.AllocateArgs{Range: moving[0], Count: 1}, nil)
	require.Nil(e, "alpha writes the arrived range once its calls returned")
}

// TestArrivingBucketWaitsForTheOpeningBlock: a manifest of a bucket that
// moves to a node with a block still processing there waits on it for
// that block, as an allocation does, and is signed for the new membership
// once it is accepted; a caller that stops waiting first gets NotReady
// (membership_opening).
func TestArrivingBucketWaitsForTheOpeningBlock(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newSilencedNet(t)
	const dead = 2
	heir, moving := movingRanges(t, nw, dead, 1)
	nw.enterRound(4) // the next block drops the dead validator
	opening := nw.openingProcessing(0, 0, 1)
	w := nw.vms[heir].Writer()
	m := txs.Manifest{Bucket: moving[0], Key: "a/b.txt"}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := w.PutManifest(short, m)
	cancel()
	require.ErrorIs(err, writer.ErrMembershipOpening)
	require.ErrorIs(err, chain.ErrNotReady)

	type result struct {
		tx  *txs.Tx
		err error
	}
	put := make(chan result, 1)
	go func() {
		tx, err := w.PutManifest(ctx, m)
		put <- result{tx, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for gathered(t, nw.regs[heir], "opening_waits") < 1 {
		select {
		case r := <-put:
			t.Fatalf("the manifest answered before the opening block: %v", r.err)
		case <-time.After(2 * time.Millisecond):
		}
		require.True(time.Now().Before(deadline), "the manifest waits for the opening block")
	}
	nw.acceptOpening(opening)
	r := within(t, put, "the manifest's answer after the opening block")
	require.NoError(r.err)
	require.Equal(nw.keys[heir].NodeID, r.tx.Unsigned.Head().Owner)
	require.Equal(nw.vms[heir].Chain().InForce().Fingerprint(), r.tx.Unsigned.Head().Fingerprint, "signed for the membership the opening block put in force")
	require.True(nw.vms[heir].Mempool().Has(r.tx.ID()))
	require.Zero(gathered(t, nw.regs[heir], "opening_waits"))
}

// TestArrivingRangeWaitsOutADeadProposerSlot: a request for a range that
// moves here while the block that moves it processes waits for that block
// longer than a dead validator's 5 s proposer slot and is signed when the
// block is accepted, rather than answered NotReady just before it.
func TestArrivingRangeWaitsOutADeadProposerSlot(t *testing.T) {
	require := require.New(t)
	nw := newSilencedNet(t)
	const dead = 2
	heir, moving := movingRanges(t, nw, dead, 1)
	nw.enterRound(4) // the next block drops the dead validator
	opening := nw.openingProcessing(0, 0, 1)
	w := nw.vms[heir].Writer()

	type result struct {
		sub writer.Submitted
		err error
	}
	answered := make(chan result, 1)
	began := time.Now()
	go func() {
		sub, err := w.AllocateOne(context.Background(), txs.AllocateEntry{Range: moving[0], Count: 1})
		answered <- result{sub, err}
	}()
	// The opening block is accepted a proposer slot (5 s) later and a few
	// hundred milliseconds more, as on a loaded machine.
	select {
	case r := <-answered:
		t.Fatalf("answered %v after %s, before the opening block", r.err, time.Since(began).Round(time.Millisecond))
	case <-time.After(5*time.Second + 500*time.Millisecond):
	}
	nw.acceptOpening(opening)
	r := within(t, answered, "the answer after the opening block")
	require.NoError(r.err)
	require.Equal(nw.keys[heir].NodeID, r.sub.Owner)
	tx, ok := nw.vms[heir].Mempool().Get(r.sub.TxID)
	require.True(ok)
	require.Zero(tx.Unsigned.Head().BlockHeight, "signed against the membership in force, bound to no height")
}

// TestArrivingRangeRidesInTheOpeningBlock: requests for ranges that move
// to a node at the next block are signed at once, bound to that block's
// height and pinned to the membership it will open (writer.pinFor), and
// ride in it: a grouped allocation, a pooled one's reservation and a
// manifest of an arriving bucket. The validator that builds the block
// admits them without having computed that membership before. They used
// to wait for that block and go into the one after it, a height later: 5 s
// more per proposer slot drawn for a dead validator.
func TestArrivingRangeRidesInTheOpeningBlock(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newSilencedNet(t)
	const dead = 2
	heir, moving := movingRanges(t, nw, dead, 3)
	proposer := 1 - heir
	nw.enterRound(4) // the next block drops the dead validator
	w := nw.vms[heir].Writer()
	height := nw.vms[heir].Chain().LastAccepted().Block.Height + 1
	next := nw.snapshot(heir)
	require.NotEqual(nw.vms[heir].Chain().InForce().Fingerprint(), next.Fingerprint())

	grouped, err := w.AllocateOne(ctx, txs.AllocateEntry{Range: moving[0], Count: 3})
	require.NoError(err, "signed at once")
	manifest, err := w.PutManifest(ctx, txs.Manifest{Bucket: moving[2], Key: "a/b.txt"})
	require.NoError(err, "signed at once")
	type result struct {
		p   writer.Pooled
		err error
	}
	pooled := make(chan result, 1)
	go func() {
		p, err := w.AllocatePooled(ctx, moving[1], 2)
		pooled <- result{p, err}
	}()
	own := func() []*txs.Tx {
		var out []*txs.Tx
		for _, tx := range nw.vms[heir].Mempool().All() {
			if !tx.IsHeartbeat() && tx.Unsigned.Head().Owner == nw.keys[heir].NodeID {
				out = append(out, tx)
			}
		}
		return out
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(own()) < 3 {
		require.True(time.Now().Before(deadline), "the pooled request's reservation is signed at once too")
		time.Sleep(time.Millisecond)
	}
	require.Zero(gathered(t, nw.regs[heir], "opening_waits"), "nothing waits for the opening block")
	require.Equal(3.0, gathered(t, nw.regs[heir], "bound_writes_total"))
	for _, tx := range own() {
		h := tx.Unsigned.Head()
		require.Equal(height, h.BlockHeight, "bound to the next block")
		require.Equal(next.Fingerprint(), h.Fingerprint, "pinned to the membership it opens")
		nw.gossip(heir, tx)
	}

	for _, i := range []int{0, 1} {
		hb, err := nw.vms[i].Writer().Heartbeat(ctx)
		require.NoError(err)
		nw.gossip(i, hb)
	}
	b, err := nw.round(proposer, 10)
	require.NoError(err)
	require.Equal(height, b.Block.Height)
	require.True(b.Changed(), "the block opens the new membership")
	included := map[ids.ID]bool{}
	for _, tx := range b.Txs {
		included[tx.ID()] = true
	}
	require.True(included[grouped.TxID], "the grouped allocation rides in the opening block")
	require.True(included[manifest.ID()], "so does the manifest")
	r := within(t, pooled, "the pooled request's answer after the opening block")
	require.NoError(r.err)
	require.True(included[r.p.TxID], "so does the pooled request's reservation")
	require.Zero(gathered(t, nw.regs[heir], "bound_writes_missed_total"))
	rc, err := w.Receipt(grouped.TxID)
	require.NoError(err)
	require.Equal(api.StatusAccepted, rc.Status)
	require.Equal(height, rc.Height)
}

// TestBuildSettlesAfterAMembershipChange: after accepting a block that
// changed the membership, a node offers the engine its next block only
// Settle later, so that the other new owners' first writes (signed when
// they accept it) make the same block; without a change, pending work is
// offered at once.
func TestBuildSettlesAfterAMembershipChange(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nw := newSilencedNet(t)
	const observer = 1
	// Work pending on the observer only (not gossiped): offered at once.
	rk := nw.ownedBy(observer, 1, 10)[0]
	_, err := nw.vms[observer].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 1}})
	require.NoError(err)
	msg, err := nw.vms[observer].WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)

	nw.enterRound(4)
	nw.heartbeats(0, 0, 1) // drops the dead validator: the membership changes
	accepted := time.Now()
	require.Equal(2, nw.snapshot(observer).Len())
	msg, err = nw.vms[observer].WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)
	require.GreaterOrEqual(time.Since(accepted), builder.Settle/2, "the next block waited for the change to settle")
}

// TestNoBlockOnAnUnacceptedMembershipChange: a node builds nothing on a
// block that puts a new membership in force until it has accepted that
// block itself and the change settled. The new owners' first writes are
// signed as they accept it; a block built on it while it was processing
// (seen in a failover: 160 ms after the opening block, before its builder
// had accepted it) carried only the writes of whoever accepted it first,
// and the others' waited for another height.
func TestNoBlockOnAnUnacceptedMembershipChange(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nw := newSilencedNet(t)
	const first, observer = 0, 1
	pc := &snowblock.Context{PChainHeight: 10}

	// Round 4: the opening block drops the dead validator; it is verified
	// everywhere and accepted by first only.
	nw.enterRound(4)
	for _, i := range []int{0, 1} {
		tx, err := nw.vms[i].Writer().Heartbeat(ctx)
		require.NoError(err)
		nw.gossip(i, tx)
	}
	b, err := nw.vms[first].BuildBlockWithContext(ctx, pc)
	require.NoError(err)
	opening := nw.deliver(b, 10)
	require.True(opening[first].(*chain.Block).Changed())
	require.NoError(opening[first].Accept(ctx))

	// first signs a write under the new membership; the observer has it.
	inForce := nw.vms[first].Chain().InForce()
	rk := ""
	for k := 0; rk == "" && k < 1000; k++ {
		if r := fmt.Sprintf("own-%03d", k); inForce.Owner(r) == nw.keys[first].NodeID {
			rk = r
		}
	}
	tx, err := nw.vms[first].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 1}})
	require.NoError(err)
	require.Equal(inForce.Fingerprint(), tx.Unsigned.Head().Fingerprint)
	require.NoError(nw.vms[observer].Writer().SubmitTx(tx))

	// The observer prefers the opening block, still processing there.
	require.NoError(nw.vms[observer].SetPreferenceWithContext(ctx, b.ID(), pc))
	_, err = nw.vms[observer].BuildBlockWithContext(ctx, pc)
	require.ErrorIs(err, builder.ErrNoWork, "nothing is built on the processing opening block")

	// Accepted but not settled: an engine that asks anyway (with an event
	// it got before) gets nothing either.
	require.NoError(opening[observer].Accept(ctx))
	accepted := time.Now()
	_, err = nw.vms[observer].BuildBlockWithContext(ctx, pc)
	require.ErrorIs(err, builder.ErrNoWork, "nothing is built while the change settles")
	require.Less(time.Since(accepted), builder.Settle, "asked within the settle")

	// Settled, the next block carries the write.
	msg, err := nw.vms[observer].WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)
	require.GreaterOrEqual(time.Since(accepted), builder.Settle/2, "the next block waited for the change to settle")
	next, err := nw.vms[observer].BuildBlockWithContext(ctx, pc)
	require.NoError(err)
	var carried []ids.ID
	for _, x := range next.(*chain.Block).Txs {
		carried = append(carried, x.ID())
	}
	require.Contains(carried, tx.ID())
}

// TestTickInTheMiddleOfAnIdleRound: on a chain with nothing pending, a
// node builds one empty block (a tick) once the middle of a liveness round
// has passed with no block after it, and no more in that round: the next
// height's proposer slots then begin mid-round, so that a dead
// validator's slot at the next round's start cannot keep that round
// without a block. Before the middle, or with ticks off, it builds
// nothing.
func TestTickInTheMiddleOfAnIdleRound(t *testing.T) {
	require := require.New(t)
	nw := newNetWith(t, 3, livenessGenesis)
	nw.now.Store(3 * 10_000) // round 3's start
	nw.ready(10)
	nw.heartbeats(0, 0, 1, 2)
	nw.now.Store(3*10_000 + 4_999)
	_, err := nw.round(1, 10)
	require.ErrorIs(err, builder.ErrNoWork, "before the round's middle")
	event, err := eventWithin(nw.vms[1], 100*time.Millisecond)
	require.Error(err, "no event before the round's middle, got %v", event)

	nw.now.Store(3*10_000 + 5_000)
	_, err = eventWithin(nw.vms[1], 5*time.Second)
	require.NoError(err, "the engine is told to build the tick")
	tick, err := nw.round(1, 10)
	require.NoError(err)
	require.Empty(tick.Block.Txs)
	require.GreaterOrEqual(tick.Block.Timestamp, uint64(3*10_000+5_000))
	_, err = nw.round(2, 10)
	require.ErrorIs(err, builder.ErrNoWork, "one tick a round")

	nw.now.Store(4*10_000 + 6_000) // round 4, past its middle, no block in it
	nw.vms[2].Builder().NoTicks()
	_, err = nw.round(2, 10)
	require.ErrorIs(err, builder.ErrNoWork, "ticks off")
	tick, err = nw.round(0, 10)
	require.NoError(err)
	require.Empty(tick.Block.Txs)
}

// eventWithin is the VM's next WaitForEvent answer, or an error after d.
func eventWithin(v *vm.VM, d time.Duration) (common.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return v.Builder().WaitForEvent(ctx)
}

// TestBlockThatMovesRangesWaitsForTheNewOwners: the block that moves ranges
// to new owners is built OpeningHold into its round at the earliest, so that
// the new owners' first writes, signed once clients learn of the move at
// the round's start, reach its builder and ride in it; WaitForEvent waits
// out the hold instead of offering the build again at once. A block that
// moves nothing is built at once, and so is one that moves ranges a round
// or more after the move showed (its round's start slot was a dead
// validator's): the new owners' writes were signed long before.
func TestBlockThatMovesRangesWaitsForTheNewOwners(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nw := newSilencedNet(t)
	pc := &snowblock.Context{PChainHeight: 10}
	const early = 400 // ms into round 4, whose first block drops the dead validator
	nw.now.Store(4*10_000 + early)
	for _, i := range []int{0, 1} {
		tx, err := nw.vms[i].Writer().Heartbeat(ctx)
		require.NoError(err)
		nw.gossip(i, tx)
	}
	_, err := nw.vms[0].BuildBlockWithContext(ctx, pc)
	require.ErrorIs(err, builder.ErrNoWork, "held")
	asked := time.Now()
	msg, err := nw.vms[0].WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg)
	hold := builder.OpeningHold - early*time.Millisecond
	require.GreaterOrEqual(time.Since(asked), hold/2, "WaitForEvent waited out the hold")

	nw.now.Store(4*10_000 + builder.OpeningHold.Milliseconds())
	b, err := nw.vms[0].BuildBlockWithContext(ctx, pc)
	require.NoError(err)
	require.True(b.(*chain.Block).Changed())
	acceptAll(t, nw.deliver(b, 10))
	nw.prefer(b.ID())
	require.NoError(nw.vms[0].Builder().Settled(ctx))

	// Round 5 keeps the members: its first block is built at its start.
	nw.now.Store(5*10_000 + 1)
	for _, i := range []int{0, 1} {
		tx, err := nw.vms[i].Writer().Heartbeat(ctx)
		require.NoError(err)
		nw.gossip(i, tx)
	}
	b, err = nw.vms[0].BuildBlockWithContext(ctx, pc)
	require.NoError(err, "a block that moves nothing is not held")
	require.Len(b.(*chain.Block).Txs, 2)

	// The move showed in round 4, a round without a block; its block in
	// round 5 is built at once.
	late := newSilencedNet(t)
	late.now.Store(5*10_000 + early)
	for _, i := range []int{0, 1} {
		tx, err := late.vms[i].Writer().Heartbeat(ctx)
		require.NoError(err)
		late.gossip(i, tx)
	}
	b, err = late.vms[0].BuildBlockWithContext(ctx, pc)
	require.NoError(err, "the move showed a round before")
	require.True(b.(*chain.Block).Changed())
}

// requireRepinned waits until node 0 re-signed its stale transaction old
// for the membership in force, builds the block that carries only the
// replacement, and checks that old's receipt follows it to acceptance.
func (nw *net) requireRepinned(old *txs.Tx) {
	nw.t.Helper()
	require := require.New(nw.t)
	var replacement ids.ID
	require.Eventually(func() bool {
		rc, err := nw.vms[0].Writer().Receipt(old.ID())
		if err != nil || rc.ReplacedBy == nil {
			return false
		}
		replacement = ids.ID(*rc.ReplacedBy)
		return nw.vms[0].Mempool().Has(replacement)
	}, 10*time.Second, 10*time.Millisecond, "the owner re-signs its stale %T", old.Unsigned)
	b, err := nw.round(0, 10)
	require.NoError(err)
	require.Len(b.Txs, 1)
	require.Equal(replacement, b.Txs[0].ID())
	rc, err := nw.vms[0].Writer().WaitReceipt(context.Background(), old.ID())
	require.NoError(err)
	require.Equal("accepted", rc.Status)
}

// TestMembershipChangeRepinsPendingLease: a lease operation still pending
// when a new membership comes into force is re-signed like any other write
// of its owner (a review found the re-signing panicking on a LeaseTx in a
// background goroutine, killing the VM process), and the holder's call is
// answered once, by the block that carries the replacement.
func TestMembershipChangeRepinsPendingLease(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newSilencedNet(t)

	var rk string
	for k := 0; ; k++ {
		rk = fmt.Sprintf("lease-repin-%03d", k)
		if nw.snapshot(0).Owner(rk) == nw.keys[0].NodeID {
			break
		}
	}
	old, err := nw.vms[0].Writer().Lease(ctx, txs.LeaseEntry{Range: rk, Op: txs.LeaseAcquire, Holder: "shell-a", TTLMs: 10_000})
	require.NoError(err)

	nw.enterRound(4)
	b, err := nw.round(0, 10)
	require.NoError(err)
	require.Empty(b.Txs, "the stale lease cannot go into a block of the new membership")
	nw.requireRepinned(old)
	cur, ok, err := nw.vms[1].Chain().State().Lease(rk)
	require.NoError(err)
	require.True(ok)
	require.Equal("shell-a", cur.Holder)
	require.Equal(uint64(1), cur.Token, "granted once")
}
