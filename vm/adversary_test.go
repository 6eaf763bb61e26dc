package vm_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/builder"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/writer"
)

var adversarySeeds = flag.Int("adversary.seeds", 4, "how many seeds TestAdversary runs (make test runs the default; raise it to search longer)")

// advGenesis: 10 s liveness rounds with K=1, the most sensitive setting
// (an honest validator missing one epoch's heartbeat drops out), a 1 s skew
// bound and a pool large enough for the junk.
var advGenesis = []byte(`{"timestamp": 1000, "roundDurationMs": 10000, "livenessRounds": 1, "mempool": {"maxTxs": 512, "maxBytes": 4194304}}`)

const (
	byz       = 3 // the Byzantine validator; 0..2 are honest (3/4 of the stake)
	advRounds = 6
	advSteps  = 10
	// advEpoch0 is the first liveness round of a run: clocks at a real date
	// (November 2026), so epoch numbers are as large as on a real network.
	advEpoch0 = 179_600_000
)

var honest = []int{0, 1, 2}

// TestAdversary drives validator 3 with a seeded random strategy against
// three honest validators: heartbeats for future epochs and duplicates,
// stale, expired, replayed, forged and non-owner transactions, blocks
// dated ahead (within and beyond the skew bound), malformed and oversize
// blocks, and votes withheld (it verifies blocks late). After every epoch
// and at the end it checks: honest validators agree on every verdict and
// on the last accepted block, stay members, and see their client work
// accepted within two epochs; no range's accepted allocations overlap; no
// replaced transaction is ever applied. `go test ./vm -run TestAdversary
// -adversary.seeds 200` searches more seeds.
func TestAdversary(t *testing.T) {
	for seed := 1; seed <= *adversarySeeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runAdversary(t, uint64(seed)) })
	}
}

type adversary struct {
	t      *testing.T
	nw     *net
	rng    *rand.Rand
	ranges []string
	// requests are honest clients' allocations, with the epoch they were
	// made in.
	requests []advRequest
	// accepted are transactions of accepted blocks, for replays.
	accepted []*txs.Tx
	// lagging are accepted blocks the Byzantine node has not verified yet.
	lagging []*chain.Block
	last    *chain.Block
	stats   map[string]int
}

type advRequest struct {
	txID  ids.ID
	owner int // the node that signed it, which follows its re-pins
	round uint64
}

func runAdversary(t *testing.T, seed uint64) {
	nw := newNetWith(t, 4, advGenesis)
	a := &adversary{t: t, nw: nw, rng: rand.New(rand.NewPCG(seed, 15)), stats: map[string]int{}}
	nw.now.Store(advEpoch0*10_000 + 5000)
	nw.ready(10)
	for k := range 12 {
		a.ranges = append(a.ranges, fmt.Sprintf("adv-%d-%02d", seed, k))
	}
	for r := int64(advEpoch0 + 1); r <= advEpoch0+advRounds; r++ {
		nw.now.Store(r*10_000 + 500)
		a.heartbeats(uint64(r))
		for step := range int64(advSteps) {
			nw.now.Store(r*10_000 + 500 + step*700)
			switch x := a.rng.IntN(10); {
			case x < 4:
				a.clientWork(uint64(r))
			case x < 6:
				a.junk(uint64(r))
			case x < 7:
				a.malformedBlock()
			default:
				a.block()
			}
		}
		nw.now.Store(r*10_000 + 8_000)
		a.flush()
		a.checkAgreement()
		for _, i := range honest {
			for _, j := range honest {
				_, member := nw.vms[i].Chain().InForce().Weight(nw.keys[j].NodeID)
				require.True(t, member, "epoch %d: vm %d sees honest vm %d out of the membership", r, i, j)
			}
		}
	}
	a.finish()
	t.Logf("seed %d: %d requests, moves %v", seed, len(a.requests), a.stats)
}

// submit offers tx to every honest VM and returns their answers; the
// Byzantine VM gets it too, but only sometimes.
func (a *adversary) submit(tx *txs.Tx) []error {
	var errs []error
	for _, i := range honest {
		errs = append(errs, a.nw.vms[i].Writer().SubmitTx(tx))
	}
	if a.rng.IntN(2) == 0 {
		_ = a.nw.vms[byz].Writer().SubmitTx(tx)
	}
	return errs
}

// refused requires every honest VM to refuse tx with target.
func (a *adversary) refused(tx *txs.Tx, target error, what string) {
	for i, err := range a.submit(tx) {
		require.ErrorIs(a.t, err, target, "%s: honest vm %d", what, i)
	}
	a.stats[what]++
}

// heartbeats: every honest validator sends its heartbeat, and every honest
// pool takes it, whatever the adversary sent before; the Byzantine one
// sends its own only sometimes.
func (a *adversary) heartbeats(round uint64) {
	ctx := context.Background()
	for _, i := range honest {
		hb, err := a.nw.vms[i].Writer().Heartbeat(ctx)
		require.NoError(a.t, err)
		if hb == nil {
			continue
		}
		for _, j := range honest {
			if j != i {
				require.NoError(a.t, a.nw.vms[j].Writer().SubmitTx(hb), "epoch %d: honest vm %d refused vm %d's heartbeat", round, j, i)
			}
		}
		_ = a.nw.vms[byz].Writer().SubmitTx(hb)
	}
	if a.rng.IntN(4) > 0 {
		if hb, err := a.nw.vms[byz].Writer().Heartbeat(ctx); err == nil && hb != nil {
			a.submit(hb)
		}
	}
}

// clientWork has an honest client allocate in a range an honest validator
// owns (through that owner, as the client's router would).
func (a *adversary) clientWork(round uint64) {
	ctx := context.Background()
	rk := a.ranges[a.rng.IntN(len(a.ranges))]
	owner := indexOf(a.nw, a.nw.snapshot(0).Owner(rk))
	if owner == byz {
		return // clients of the Byzantine owner get what it gives them
	}
	tx, err := a.nw.vms[owner].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: uint64(1 + a.rng.IntN(8))}})
	var noe *execute.NotOwnerError
	if errors.Is(err, chain.ErrNotReady) || errors.As(err, &noe) {
		return // the range is moving: the client retries elsewhere
	}
	require.NoError(a.t, err)
	for _, j := range honest {
		if j != owner {
			require.NoError(a.t, a.nw.vms[j].Writer().SubmitTx(tx), "honest vm %d refused honest work", j)
		}
	}
	if a.rng.IntN(2) == 0 {
		_ = a.nw.vms[byz].Writer().SubmitTx(tx)
	}
	a.requests = append(a.requests, advRequest{txID: tx.ID(), owner: owner, round: round})
}

// sign signs u with the Byzantine validator's key.
func (a *adversary) sign(u txs.Unsigned) *txs.Tx {
	tx, err := a.nw.keys[byz].Sign(u)
	require.NoError(a.t, err)
	return tx
}

// header is a Byzantine header pinned where honest ones are now.
func (a *adversary) header(round uint64) txs.Header {
	e := a.nw.vms[0].Chain().InForce()
	return txs.Header{NetworkID: 5, ChainID: chainID, PChainHeight: e.Height(), Fingerprint: e.Fingerprint(),
		Owner: a.nw.keys[byz].NodeID, Nonce: a.rng.Uint64(), Round: round}
}

// junk is one Byzantine transaction move.
func (a *adversary) junk(round uint64) {
	e := a.nw.vms[0].Chain().InForce()
	byzRange, honestRange := "", ""
	for _, rk := range a.ranges {
		if e.Owner(rk) == a.nw.keys[byz].NodeID {
			byzRange = rk
		} else {
			honestRange = rk
		}
	}
	switch a.rng.IntN(10) {
	case 0: // heartbeats for epochs to come
		for k := uint64(2); k < 12; k++ {
			h := a.header(round + k)
			h.Fingerprint = ids.Empty
			a.refused(a.sign(&txs.HeartbeatTx{Header: h}), writer.ErrOutsideWindow, "future heartbeat")
		}
	case 1: // copies of this epoch's heartbeat: one gets in, at most
		for range 3 {
			h := a.header(round)
			h.Fingerprint = ids.Empty
			a.submit(a.sign(&txs.HeartbeatTx{Header: h}))
		}
		a.stats["duplicate heartbeat"]++
	case 2: // pinned below the last accepted P-chain height
		h := a.header(round)
		h.PChainHeight--
		a.refused(a.sign(&txs.AllocateTx{Header: h, Entries: []txs.AllocateEntry{{Range: "x", Count: 1}}}), writer.ErrOutsideWindow, "old height")
	case 3: // expired (signed four epochs ago, the last accepted block is at most one epoch old)
		if byzRange == "" || round < advEpoch0+5 {
			return
		}
		a.refused(a.sign(&txs.AllocateTx{Header: a.header(round - 4), Entries: []txs.AllocateEntry{{Range: byzRange, Count: 1}}}), writer.ErrStale, "expired")
	case 4: // a membership nobody computed, bound to the next block or not
		h := a.header(round)
		h.Fingerprint = ids.ID{byte(a.rng.Uint32())}
		if a.rng.IntN(2) == 0 {
			h.BlockHeight = a.nw.vms[0].Chain().LastAccepted().Block.Height + 1
		}
		a.refused(a.sign(&txs.AllocateTx{Header: h, Entries: []txs.AllocateEntry{{Range: "x", Count: 1}}}), writer.ErrUnknownMembership, "unknown membership")
	case 5: // a range it does not own
		if honestRange == "" {
			return
		}
		a.refused(a.sign(&txs.AllocateTx{Header: a.header(round), Entries: []txs.AllocateEntry{{Range: honestRange, Count: 1}}}), execute.ErrNotOwner, "not owner")
	case 6: // a replay of an accepted transaction, or a forged signature on one
		if len(a.accepted) == 0 {
			return
		}
		tx := a.accepted[a.rng.IntN(len(a.accepted))]
		if a.rng.IntN(2) == 0 {
			for _, err := range a.submit(tx) {
				require.Error(a.t, err, "a replayed transaction is refused")
			}
			a.stats["replay"]++
			return
		}
		b := append([]byte(nil), tx.Bytes()...)
		b[len(b)-1-a.rng.IntN(96)] ^= 1 << a.rng.IntN(8)
		forged, err := txs.Parse(b, txs.DefaultLimits())
		if err != nil {
			return
		}
		for _, err := range a.submit(forged) {
			require.Error(a.t, err, "a forged signature is refused")
		}
		a.stats["forged signature"]++
	case 7: // conflicting allocations of its own range: allowed, and harmless
		if byzRange == "" {
			return
		}
		for range 2 {
			a.submit(a.sign(&txs.AllocateTx{Header: a.header(round), Entries: []txs.AllocateEntry{{Range: byzRange, Count: 3}}}))
		}
		a.stats["own conflicting"]++
	case 8: // bound to a block height already accepted
		h := a.header(round)
		h.BlockHeight = a.nw.vms[0].Chain().LastAccepted().Block.Height
		a.refused(a.sign(&txs.AllocateTx{Header: h, Entries: []txs.AllocateEntry{{Range: "x", Count: 1}}}), writer.ErrStale, "bound to a passed height")
	case 9: // bound to a height far ahead, to sit in the pools
		h := a.header(round)
		h.BlockHeight = a.nw.vms[0].Chain().LastAccepted().Block.Height + 3 + a.rng.Uint64N(1<<20)
		a.refused(a.sign(&txs.AllocateTx{Header: h, Entries: []txs.AllocateEntry{{Range: "x", Count: 1}}}), writer.ErrOutsideWindow, "bound far ahead")
	}
}

// malformedBlock hands honest VMs a damaged copy of the last block, or one
// over the size limit: every honest VM refuses it, none panics.
func (a *adversary) malformedBlock() {
	if a.last == nil {
		return
	}
	ctx := context.Background()
	b := append([]byte(nil), a.last.Bytes()...)
	switch a.rng.IntN(3) {
	case 0:
		b[a.rng.IntN(len(b))] ^= byte(1 + a.rng.IntN(255))
	case 1:
		b = b[:a.rng.IntN(len(b))]
	case 2:
		b = append(b, make([]byte, 2<<20)...)
	}
	for _, i := range honest {
		blk, err := a.nw.vms[i].ParseBlock(ctx, b)
		if err != nil {
			continue
		}
		if blk.ID() == a.last.ID() {
			return // the damage left the block as it was (cannot happen with a flip)
		}
		if wc, ok := blk.(snowblock.WithVerifyContext); ok && blk.(*chain.Block).HasPChainHeight {
			err = wc.VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 10})
		} else {
			err = blk.Verify(ctx)
		}
		require.Error(a.t, err, "honest vm %d verified a damaged block", i)
	}
	a.stats["malformed block"]++
}

// block has a random validator propose on the last accepted block; the
// Byzantine one may date it ahead, within or beyond the skew bound. The
// honest validators must agree on the verdict; the block is accepted if
// they verify it (3/4 of the stake), and the Byzantine one may withhold its
// vote (verify late).
func (a *adversary) block() {
	ctx := context.Background()
	nw := a.nw
	proposer := a.rng.IntN(len(nw.vms))
	if proposer == byz {
		a.catchUp()
		nw.ahead[byz].Store([]int64{0, 500, 1000, 3000}[a.rng.IntN(4)])
		defer nw.ahead[byz].Store(0)
	}
	last, err := nw.vms[honest[0]].LastAccepted(ctx)
	require.NoError(a.t, err)
	require.NoError(a.t, nw.vms[proposer].SetPreference(ctx, last))
	bctx := &snowblock.Context{PChainHeight: 10}
	built, err := nw.vms[proposer].BuildBlockWithContext(ctx, bctx)
	if err != nil {
		require.ErrorIs(a.t, err, builder.ErrNoWork, "vm %d", proposer)
		return
	}
	var verdicts []error
	var insts []*chain.Block
	for _, i := range honest {
		inst, err := nw.vms[i].ParseBlock(ctx, built.Bytes())
		require.NoError(a.t, err)
		verdicts = append(verdicts, inst.(snowblock.WithVerifyContext).VerifyWithContext(ctx, bctx))
		insts = append(insts, inst.(*chain.Block))
	}
	for k := range verdicts {
		require.Equal(a.t, verdicts[0] == nil, verdicts[k] == nil, "honest verdicts differ on a block of vm %d: %v", proposer, verdicts)
	}
	if verdicts[0] != nil {
		require.Equal(a.t, byz, proposer, "an honest block was refused: %v", verdicts[0])
		require.ErrorIs(a.t, verdicts[0], chain.ErrTimeFuture)
		require.NoError(a.t, built.Reject(ctx))
		a.stats["block too far ahead"]++
		return
	}
	for k := range insts {
		require.NoError(a.t, insts[k].Accept(ctx))
	}
	blk := built.(*chain.Block)
	if proposer == byz {
		require.NoError(a.t, built.Accept(ctx))
		a.stats["byzantine block"]++
	} else {
		a.lagging = append(a.lagging, blk)
		if a.rng.IntN(4) > 0 {
			a.catchUp()
		} else {
			a.stats["withheld vote"]++
		}
	}
	nw.prefer(blk.ID())
	a.accepted = append(a.accepted, blk.Txs...)
	a.last = blk
}

// catchUp has the Byzantine VM verify and accept the blocks it withheld
// its vote on: it is a correct VM, so it must agree with them.
func (a *adversary) catchUp() {
	ctx := context.Background()
	for _, b := range a.lagging {
		inst, err := a.nw.vms[byz].ParseBlock(ctx, b.Bytes())
		require.NoError(a.t, err)
		require.NoError(a.t, inst.(snowblock.WithVerifyContext).VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 10}))
		require.NoError(a.t, inst.Accept(ctx))
	}
	a.lagging = nil
}

// flush has honest proposers build until none has work for a block.
func (a *adversary) flush() {
	for idle := 0; idle < len(honest); {
		before := a.last
		a.honestBlock(honest[a.rng.IntN(len(honest))])
		if a.last == before {
			idle++
		} else {
			idle = 0
		}
	}
}

func (a *adversary) honestBlock(proposer int) {
	ctx := context.Background()
	nw := a.nw
	last, err := nw.vms[proposer].LastAccepted(ctx)
	require.NoError(a.t, err)
	for _, i := range honest {
		require.NoError(a.t, nw.vms[i].SetPreference(ctx, last))
	}
	// A proposer builds nothing while a change of members settles (real
	// time, which the net's clock does not move).
	require.NoError(a.t, nw.vms[proposer].Builder().Settled(ctx))
	b, err := nw.vms[proposer].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	if err != nil {
		require.ErrorIs(a.t, err, builder.ErrNoWork)
		return
	}
	for _, i := range honest {
		inst, err := nw.vms[i].ParseBlock(ctx, b.Bytes())
		require.NoError(a.t, err)
		require.NoError(a.t, inst.(snowblock.WithVerifyContext).VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 10}))
		require.NoError(a.t, inst.Accept(ctx))
	}
	blk := b.(*chain.Block)
	a.lagging = append(a.lagging, blk)
	nw.prefer(blk.ID())
	a.accepted = append(a.accepted, blk.Txs...)
	a.last = blk
}

// checkAgreement: once the Byzantine VM caught up, every VM has the same
// last accepted block (and so the same state root).
func (a *adversary) checkAgreement() {
	a.catchUp()
	ctx := context.Background()
	want, err := a.nw.vms[0].LastAccepted(ctx)
	require.NoError(a.t, err)
	for i, v := range a.nw.vms {
		got, err := v.LastAccepted(ctx)
		require.NoError(a.t, err)
		require.Equal(a.t, want, got, "vm %d", i)
	}
}

// finish settles every honest request and checks the run's invariants.
func (a *adversary) finish() {
	ctx := context.Background()
	nw := a.nw
	deadline := time.Now().Add(20 * time.Second)
	var replaced []ids.ID
	type interval struct{ lo, hi uint64 }
	for _, r := range a.requests {
		id := r.txID
		for {
			rc, err := nw.vms[r.owner].Writer().Receipt(id)
			require.NoError(a.t, err)
			if rc.ReplacedBy != nil {
				replaced = append(replaced, id)
				a.stats["re-pinned request"]++
				id = ids.ID(*rc.ReplacedBy)
				continue
			}
			if rc.Status == api.StatusAccepted || rc.Status == api.StatusRejected {
				if rc.Status == api.StatusRejected {
					require.Contains(a.t, rc.Error, "owner changed", "honest work rejected for another reason")
					a.stats["rejected: owner changed"]++
				} else {
					blkID, err := nw.vms[0].GetBlockIDAtHeight(ctx, rc.Height)
					require.NoError(a.t, err)
					blk, err := nw.vms[0].GetBlock(ctx, blkID)
					require.NoError(a.t, err)
					accepted := uint64(blk.(*chain.Block).Block.Timestamp) / 10_000
					require.LessOrEqual(a.t, accepted, r.round+2, "request of epoch %d accepted in epoch %d", r.round, accepted)
				}
				break
			}
			require.True(a.t, time.Now().Before(deadline), "request %s still %s", id, rc.Status)
			a.flush()
			time.Sleep(time.Millisecond) // owners re-sign in the background
		}
	}
	a.checkAgreement()
	for _, id := range replaced {
		for i, v := range nw.vms {
			_, err := v.Chain().State().Receipt(id)
			require.Error(a.t, err, "vm %d applied %s, which its owner replaced", i, id)
		}
	}
	// No range's accepted allocations overlap, on any node.
	last, err := nw.vms[0].LastAccepted(ctx)
	require.NoError(a.t, err)
	lb, err := nw.vms[0].GetBlock(ctx, last)
	require.NoError(a.t, err)
	byRange := map[string][]interval{}
	for h := uint64(1); h <= lb.Height(); h++ {
		id, err := nw.vms[0].GetBlockIDAtHeight(ctx, h)
		require.NoError(a.t, err)
		b, err := nw.vms[0].GetBlock(ctx, id)
		require.NoError(a.t, err)
		for _, tx := range b.(*chain.Block).Txs {
			rc, err := nw.vms[0].Chain().State().Receipt(tx.ID())
			require.NoError(a.t, err)
			for _, e := range rc.Entries {
				if e.Range != "" {
					byRange[e.Range] = append(byRange[e.Range], interval{e.Base, e.Base + e.Count})
				}
			}
		}
	}
	for rk, ivs := range byRange {
		sort.Slice(ivs, func(x, y int) bool { return ivs[x].lo < ivs[y].lo })
		for k := 1; k < len(ivs); k++ {
			require.LessOrEqual(a.t, ivs[k-1].hi, ivs[k].lo, "ids issued twice in %s", rk)
		}
		for i, v := range nw.vms {
			require.Equal(a.t, ivs[len(ivs)-1].hi, counter(a.t, v, rk), "vm %d", i)
		}
	}
}
