package vm_test

// Tests of the defects a review found by attacking the VM in process: each
// one failed before its fix. The seeded adversary is in adversary_test.go.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/ids"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/api"
	"github.com/s-chain/schain/vm/block"
	"github.com/s-chain/schain/vm/builder"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/writer"
)

// TestVerifyChecksTheContextOfAVerifiedBlock: the proposer VM may wrap one
// inner block in two proposer blocks of different P-chain heights. The
// verdict on the second context must not depend on whether this node saw
// the first: a block verified under its own epoch still fails under another.
func TestVerifyChecksTheContextOfAVerifiedBlock(t *testing.T) {
	ctx := context.Background()
	nw := newNet(t, 2)
	nw.ready(10)
	tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: nw.rangeOf(0, "ctx"), Count: 1}})
	require.NoError(t, err)
	nw.gossip(0, tx)
	b, err := nw.vms[0].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(t, err)

	fresh, err := nw.vms[1].ParseBlock(ctx, b.Bytes())
	require.NoError(t, err)
	wc := fresh.(snowblock.WithVerifyContext)
	require.ErrorIs(t, wc.VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 20}), chain.ErrPChainHeightMismatch, "a node seeing only the other context")
	require.NoError(t, wc.VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 10}))
	require.ErrorIs(t, wc.VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 20}), chain.ErrPChainHeightMismatch, "the same verdict after the block verified under its own context")
	require.ErrorIs(t, b.(snowblock.WithVerifyContext).VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 20}), chain.ErrPChainHeightMismatch, "the builder's own instance too")
}

// TestGossipCannotDriveValidatorSetLookups: admission refuses a tx pinned
// outside [last accepted, newest seen] P-chain height before it looks up a
// validator set: junk gossip costs no P-chain lookups and evicts no cache.
func TestGossipCannotDriveValidatorSetLookups(t *testing.T) {
	nw := newNet(t, 2)
	for h := uint64(1000); h < 1100; h++ {
		nw.sets[h] = nw.sets[10] // the heights exist: only admission can refuse them
	}
	nw.ready(10)
	before := nw.lookups.Load()
	fp := nw.snapshot(1).Fingerprint()
	for h := uint64(1000); h < 1100; h++ {
		tx, err := nw.keys[0].Sign(&txs.AllocateTx{Header: nw.header(0, h, fp, h), Entries: []txs.AllocateEntry{{Range: "junk", Count: 1}}})
		require.NoError(t, err)
		require.ErrorIs(t, nw.vms[1].Writer().SubmitTx(tx), writer.ErrOutsideWindow)
	}
	below, err := nw.keys[0].Sign(&txs.AllocateTx{Header: nw.header(0, 9, fp, 1), Entries: []txs.AllocateEntry{{Range: "junk", Count: 1}}})
	require.NoError(t, err)
	require.ErrorIs(t, nw.vms[1].Writer().SubmitTx(below), writer.ErrOutsideWindow)
	require.Equal(t, before, nw.lookups.Load(), "no lookup for heights outside the window")
}

// TestGossipInsideTheWindowCannotDriveLookups (issue 30, finding 8):
// after a long idle period the newest P-chain height seen is far above the
// last accepted block's, and every height in between is inside the
// admission window. Junk heartbeats naming a validator, each at another
// height of the window and badly signed, must not each cost a validator-set
// lookup (and an eviction from the cache): admission checks what is cheap
// first, and bounds the lookups gossip can cause.
func TestGossipInsideTheWindowCannotDriveLookups(t *testing.T) {
	nw := newNet(t, 2)
	const newest = 5010
	for h := uint64(21); h <= newest; h++ {
		nw.sets[h] = nw.sets[10]
	}
	nw.ready(10)
	victim := nw.vms[1]
	require.NoError(t, victim.SetPreferenceWithContext(context.Background(), victim.Chain().LastAccepted().ID(), &snowblock.Context{PChainHeight: newest}))
	before := nw.lookups.Load()
	refused := 0
	for h := uint64(21); h < 121; h++ {
		// Signed by the other validator's key: the signature cannot verify.
		tx, err := nw.keys[1].Sign(&txs.HeartbeatTx{Header: nw.header(0, h, ids.Empty, h)})
		require.NoError(t, err)
		if victim.Writer().SubmitTx(tx) != nil {
			refused++
		}
	}
	require.Equal(t, 100, refused, "junk is refused")
	require.LessOrEqual(t, nw.lookups.Load()-before, int64(writer.MaxLookupBurst), "100 junk heartbeats, each at another height of the window, cost at most a burst of lookups")
}

// TestHugeWaitWaits: a waitMs beyond what a duration holds is the node's
// bound, not an immediate timeout.
func TestHugeWaitWaits(t *testing.T) {
	nw := newNet(t, 2)
	nw.ready(10)
	mine := nw.rangeOf(0, "wait")
	done := make(chan *rpcErr, 1)
	var reply api.AllocateReply
	go func() {
		done <- rpcCall(t, nw.server(0), "allocate", api.AllocateArgs{Range: mine, Count: 1, Wait: api.WaitAccepted, WaitMs: 10_000_000_000_000}, &reply)
	}()
	// The request waits for its block: build it once the tx is pending.
	require.Eventually(t, func() bool { return nw.vms[0].Mempool().Len() > 0 }, 10*time.Second, time.Millisecond)
	select {
	case e := <-done:
		t.Fatalf("returned before its block: %+v", e)
	default:
	}
	_, err := nw.round(0, 10)
	require.NoError(t, err)
	select {
	case e := <-done:
		require.Nil(t, e)
		require.NotNil(t, reply.Receipt)
		require.Equal(t, api.StatusAccepted, reply.Receipt.Status)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer after the block was accepted")
	}
}

// ownedOfLen returns n ranges of exactly length bytes owned by node i in
// its current snapshot.
func (nw *net) ownedOfLen(i, n, length int) []string {
	e := nw.snapshot(i)
	var out []string
	for k := 0; len(out) < n; k++ {
		r := fmt.Sprintf("w%0*d", length-1, k)
		if e.Owner(r) == nw.keys[i].NodeID {
			out = append(out, r)
		}
	}
	return out
}

// TestBuilderNeverWedgesOnAFullBlock: transactions that fit the mempool's
// byte budget but not one block (framing included) go into consecutive
// blocks; before, block.New failed on every build and first-in first-out
// picking repeated the failure until the mempool changed.
func TestBuilderNeverWedgesOnAFullBlock(t *testing.T) {
	const maxTxs, maxBlock = 64, 64_000
	g := []byte(fmt.Sprintf(`{"timestamp": 1000, "txLimits": {"maxTxBytes": 2048}, "blockLimits": {"maxTxs": %d, "maxBlockBytes": %d}, "mempool": {"maxTxs": 256, "maxBytes": 1048576}}`, maxTxs, maxBlock))
	nw := newNetWith(t, 2, g)
	nw.ready(10)
	fp := nw.snapshot(0).Fingerprint()
	long := nw.ownedOfLen(0, 5, 120)
	// Pick a last range length that makes each tx 997 bytes: 64 of them fit
	// a naive byte budget (63,808 bytes), not the block with its framing.
	var size int
	var last string
	for l := 1; l <= 128 && size != 997; l++ {
		last = nw.ownedOfLen(0, 1, l)[0]
		tx, err := nw.keys[0].Sign(&txs.AllocateTx{Header: nw.header(0, 10, fp, 0), Entries: entries(append(long, last))})
		require.NoError(t, err)
		size = len(tx.Bytes())
	}
	require.Equal(t, 997, size)
	var all []*txs.Tx
	for k := range maxTxs {
		tx, err := nw.keys[0].Sign(&txs.AllocateTx{Header: nw.header(0, 10, fp, uint64(k+1)), Entries: entries(append(long, last))})
		require.NoError(t, err)
		require.NoError(t, nw.vms[1].Writer().SubmitTx(tx))
		all = append(all, tx)
	}
	included := 0
	for r := 0; r < 3 && included < len(all); r++ {
		b, err := nw.round(1, 10)
		require.NoError(t, err, "build %d", r)
		require.LessOrEqual(t, len(b.Bytes()), maxBlock)
		require.NotEmpty(t, b.Txs)
		included += len(b.Txs)
	}
	require.Equal(t, len(all), included, "every transaction went into a block")
	for _, tx := range all {
		_, err := nw.vms[0].Chain().State().Receipt(tx.ID())
		require.NoError(t, err)
	}
}

func entries(ranges []string) []txs.AllocateEntry {
	out := make([]txs.AllocateEntry, len(ranges))
	for i, r := range ranges {
		out[i] = txs.AllocateEntry{Range: r, Count: 1}
	}
	return out
}

// TestHealthNamesWhatIsWrong: a node is unhealthy while no membership open yet,
// and while it is in the P-chain set but its heartbeats do not land (it is
// about to lose its ranges); the error says which.
func TestHealthNamesWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	nw := newNetWith(t, 3, livenessGenesis)
	nw.enterRound(0)
	_, err := nw.vms[0].HealthCheck(ctx)
	require.ErrorIs(t, err, vm.ErrUnhealthy)
	require.ErrorContains(t, err, "no membership")
	nw.ready(10)
	for i := range nw.vms {
		_, err := nw.vms[i].HealthCheck(ctx)
		require.NoError(t, err, "vm %d", i)
	}
	// Node 2's heartbeats stop landing.
	for r := int64(1); r <= 2; r++ {
		nw.enterRound(r)
		nw.heartbeats(0, 0, 1)
	}
	_, err = nw.vms[0].HealthCheck(ctx)
	require.NoError(t, err)
	_, err = nw.vms[2].HealthCheck(ctx)
	require.ErrorIs(t, err, vm.ErrUnhealthy)
	require.ErrorContains(t, err, "heartbeat")
	// Once one lands it is healthy again.
	nw.heartbeats(0, 2)
	_, err = nw.vms[2].HealthCheck(ctx)
	require.NoError(t, err)
}

// newLateHeartbeatNet is a heartbeating net in round 4 whose validator 2
// signed its round-3 heartbeat, late, which has not landed: the next block
// would leave validator 2 out.
func newLateHeartbeatNet(t *testing.T) (*net, *txs.Tx) {
	nw := newHeartbeatingNet(t)
	nw.enterRound(3)
	late, err := nw.vms[2].Writer().Heartbeat(context.Background())
	require.NoError(t, err)
	nw.heartbeats(0, 0, 1)
	nw.enterRound(4)
	return nw, late
}

// landLate has validator 1 put the late heartbeat into a block whose
// clock is still in round 3 (within the skew bound): validator 2 stays a
// member in round 4.
func (nw *net) landLate(late *txs.Tx) *chain.Block {
	nw.now.Store(3*10_000 + 9_000)
	nw.gossip(2, late)
	b, err := nw.round(1, 10)
	require.NoError(nw.t, err)
	return b
}

// openRound4 opens round 4 with validators 0 and 1's heartbeats.
func (nw *net) openRound4() {
	nw.enterRound(4)
	for _, i := range []int{0, 1} {
		hb, err := nw.vms[i].Writer().Heartbeat(context.Background())
		require.NoError(nw.t, err)
		nw.gossip(i, hb)
	}
	_, err := nw.round(0, 10)
	require.NoError(nw.t, err)
}

// TestReplacedTxIsNeverApplied: a transaction its owner replaced must never
// be applied, whatever membership comes into force later. Before the fix
// an owner signed against the membership it predicted for the next block;
// when a late heartbeat kept that membership from coming into force, the
// owner re-signed, and once the predicted members and generation did come
// into force later, the original (relayed by any peer) was applied too: the
// allocation moved the counter twice.
func TestReplacedTxIsNeverApplied(t *testing.T) {
	ctx := context.Background()
	// Epoch 4: node 2's epoch-3 heartbeat has not landed, so the next
	// block would leave it out. Node 0 allocates a range it owns either way.
	nw, late := newLateHeartbeatNet(t)
	full := nw.snapshot(0)
	require.Equal(t, 2, full.Len(), "the next membership leaves node 2 out")
	var rk string
	for k := 0; rk == ""; k++ {
		r := fmt.Sprintf("replaced-%03d", k)
		if full.Owner(r) == nw.keys[0].NodeID && nw.vms[0].Chain().InForce().Owner(r) == nw.keys[0].NodeID {
			rk = r
		}
	}
	orig, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 4}})
	require.NoError(t, err)
	nw.gossip(0, orig)

	// The late heartbeat lands in a block whose proposer's clock is still
	// in epoch 3 (within the skew bound).
	nw.landLate(late)

	// Epoch 4 opens with node 2 still a member; whatever happened to the
	// allocation (included, or re-signed by its owner), it completes.
	nw.openRound4()
	final := nw.settle(0, orig.ID())
	require.Equal(t, api.StatusAccepted, final.Status)
	require.Equal(t, uint64(4), counter(t, nw.vms[1], rk))

	// Epoch 5: node 2 is silent for good; the membership that leaves it out
	// (the one node 0 predicted in epoch 4) comes into force.
	nw.enterRound(5)
	nw.heartbeats(0, 0, 1)
	require.Equal(t, 2, nw.vms[1].Chain().InForce().Len())

	// A peer relays the original transaction again.
	_ = nw.vms[1].Writer().SubmitTx(orig)
	_, _ = nw.round(1, 10)
	for i, v := range nw.vms {
		require.Equal(t, uint64(4), counter(t, v, rk), "vm %d: the allocation applied once (final receipt %s)", i, final.TxID)
	}
}

// TestBoundTxMissingItsBlockIsNeverApplied is TestReplacedTxIsNeverApplied
// for a transaction bound to a block height (txs.Header.BlockHeight): a new
// owner signs its first write against the membership it predicts for the
// next block, before that membership is in force. Here the prediction
// fails (a late heartbeat keeps the dead validator a member), the write
// misses the block at its height, and its owner cannot re-sign it. When
// the predicted membership (same members, same generation, so the same
// fingerprint) comes into force later, the transaction is refused by
// admission and by every validator's Verify: it was valid at that one
// height only.
func TestBoundTxMissingItsBlockIsNeverApplied(t *testing.T) {
	ctx := context.Background()
	// Round 4: node 2's round-3 heartbeat has not landed, so the next block
	// would leave it out, and one of its ranges moves to node 0.
	nw, late := newLateHeartbeatNet(t)
	predicted := nw.snapshot(0)
	inForce := nw.vms[0].Chain().InForce()
	require.Equal(t, 2, predicted.Len(), "the next membership leaves node 2 out")
	var rk string
	for k := 0; rk == "" && k < 1000; k++ {
		r := fmt.Sprintf("bound-%03d", k)
		if inForce.Owner(r) == nw.keys[2].NodeID && predicted.Owner(r) == nw.keys[0].NodeID {
			rk = r
		}
	}
	require.NotEmpty(t, rk)
	bound := nw.vms[0].Chain().LastAccepted().Block.Height + 1
	orig, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: 4}})
	require.NoError(t, err)
	require.Equal(t, bound, orig.Unsigned.Head().BlockHeight)
	require.Equal(t, predicted.Fingerprint(), orig.Unsigned.Head().Fingerprint)
	nw.gossip(0, orig)

	// The late heartbeat lands in the block at that height, whose proposer's
	// clock is still in round 3 (within the skew bound): no membership opens
	// there, and orig does not fit it.
	b := nw.landLate(late)
	require.Equal(t, bound, b.Block.Height)
	require.Len(t, b.Txs, 1)
	// Its height is accepted: orig leaves every pool, and its owner, who no
	// longer owns rk in the next membership, answers it rejected.
	final := nw.settle(0, orig.ID())
	require.Equal(t, api.StatusRejected, final.Status, final.Error)
	for i, v := range nw.vms {
		require.False(t, v.Mempool().Has(orig.ID()), "vm %d still holds the bound transaction", i)
	}
	require.Equal(t, 1.0, gathered(t, nw.regs[0], "bound_writes_missed_total"))

	// Round 4 opens with node 2 still a member; round 5, node 2 silent for
	// good, brings the membership node 0 predicted into force.
	nw.openRound4()
	nw.enterRound(5)
	nw.heartbeats(0, 0, 1)
	require.Equal(t, orig.Unsigned.Head().Fingerprint, nw.vms[1].Chain().InForce().Fingerprint(), "the predicted membership is in force")

	// A peer relays orig: refused as stale.
	require.ErrorIs(t, nw.vms[1].Writer().SubmitTx(orig), writer.ErrStale)
	// A Byzantine proposer puts it into the next block: refused by Verify.
	last := nw.vms[1].Chain().LastAccepted()
	forged, err := block.New(last.ID(), last.Block.Height+1, uint64(nw.now.Load()), true, 10, ids.ID{'r'}, []*txs.Tx{orig}, block.DefaultLimits())
	require.NoError(t, err)
	for i, v := range nw.vms {
		parsed, err := v.ParseBlock(ctx, forged.Bytes())
		require.NoError(t, err)
		err = parsed.(snowblock.WithVerifyContext).VerifyWithContext(ctx, &snowblock.Context{PChainHeight: 10})
		require.ErrorIs(t, err, execute.ErrWrongBlockHeight, "vm %d", i)
		require.Zero(t, counter(t, v, rk), "vm %d: the bound allocation was never applied", i)
	}
}

// settle follows txID through its replacements, having proposer build
// blocks for what is pending, until it is decided (or a deadline passes),
// and returns its final receipt. Re-signing runs in the background: it
// polls, bounded by the deadline.
func (nw *net) settle(proposer int, txID ids.ID) *api.ReceiptReply {
	deadline := time.Now().Add(10 * time.Second)
	v := nw.vms[proposer]
	for {
		rc, err := v.Writer().Receipt(txID)
		require.NoError(nw.t, err)
		switch {
		case rc.ReplacedBy != nil:
			txID = *rc.ReplacedBy
			continue
		case rc.Status == api.StatusAccepted || rc.Status == api.StatusRejected:
			return rc
		case time.Now().After(deadline):
			nw.t.Fatalf("%s still %s after 10 s", txID, rc.Status)
		}
		if tx, ok := v.Mempool().Get(txID); ok {
			for j, other := range nw.vms {
				if j != proposer && !other.Mempool().Has(txID) {
					_ = other.Writer().SubmitTx(tx)
				}
			}
			if _, err := nw.round(proposer, 10); err != nil {
				// Nothing the block could take (say, stale work that waits
				// for an accepted block to be re-pinned): blocks keep coming
				// on a live chain, so make one.
				require.ErrorIs(nw.t, err, builder.ErrNoWork)
				nw.filler(proposer)
			}
			continue
		}
		time.Sleep(time.Millisecond) // the owner re-signs in the background
	}
}

// TestHeartbeatFloodCannotEjectHonestValidators: one validator signs
// heartbeats for far-future liveness rounds and many copies of valid ones.
// Before the fix they were all admitted, never went stale, went first and
// shared one small reserve: honest heartbeats then bounced off full pools,
// honest validators left the membership after K+1 epochs and the attacker
// owned every range; the flood also filled the builder's window.
func TestHeartbeatFloodCannotEjectHonestValidators(t *testing.T) {
	ctx := context.Background()
	const attacker = 2
	nw := newNetWith(t, 3, livenessGenesis)
	nw.enterRound(0)
	nw.ready(10)
	mine := nw.rangeOf(0, "flood")
	for r := int64(1); r <= 4; r++ {
		nw.enterRound(r)
		// The attacker's junk reaches every honest pool first.
		for k := uint64(0); k < 400; k++ {
			round := uint64(r) + k/4 // 4 copies per epoch, current and future epochs
			tx, err := nw.keys[attacker].Sign(&txs.HeartbeatTx{Header: txs.Header{
				NetworkID: 5, ChainID: chainID, PChainHeight: 10, Owner: nw.keys[attacker].NodeID, Nonce: 1<<50 + k, Round: round,
			}})
			require.NoError(t, err)
			for i := range 2 {
				_ = nw.vms[i].Writer().SubmitTx(tx)
			}
		}
		for i := range 2 {
			require.LessOrEqual(t, nw.vms[i].Mempool().Len(), 3, "vm %d holds at most the attacker's previous, current and next epoch", i)
		}
		// Honest heartbeats and client work still get in, and into blocks.
		tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 1}})
		require.NoError(t, err)
		nw.gossip(0, tx)
		for i := range 2 {
			hb, err := nw.vms[i].Writer().Heartbeat(ctx)
			require.NoError(t, err)
			require.NotNil(t, hb)
			nw.gossip(i, hb)
		}
		b, err := nw.round(0, 10)
		require.NoError(t, err)
		require.Contains(t, b.Txs, tx, "client work is built")
		for i := range 2 {
			_, member := nw.vms[1].Chain().InForce().Weight(nw.keys[i].NodeID)
			require.True(t, member, "epoch %d: honest vm %d stays a member", r, i)
		}
	}
}

// TestReplayIndexStaysBounded: on a quiet P-chain whose membership never
// changes, the replay index holds only the transactions of the last few
// liveness rounds, and a burst's backlog is deleted a bounded number of
// entries per block. Before the fix it was pruned only when the P-chain
// height moved: it grew by one key per transaction, and the first block at
// a new height deleted them all in one Verify.
func TestReplayIndexStaysBounded(t *testing.T) {
	const maxTxs = 8 // a block deletes at most 2 x 8 expired entries
	ctx := context.Background()
	g := []byte(fmt.Sprintf(`{"timestamp": 1000, "roundDurationMs": 10000, "livenessRounds": 1, "blockLimits": {"maxTxs": %d}, "mempool": {"maxTxs": 256, "maxBytes": 1048576}}`, maxTxs))
	nw := newNetWith(t, 2, g)
	nw.enterRound(0)
	nw.ready(10)
	mine := nw.rangeOf(0, "replay")
	replayKeys := func() int {
		it := nw.dbs[1].NewIteratorWithPrefix([]byte{'r'})
		defer it.Release()
		n := 0
		for it.Next() {
			n++
		}
		return n
	}
	beat := func() {
		for i := range nw.vms {
			hb, err := nw.vms[i].Writer().Heartbeat(ctx)
			require.NoError(t, err)
			if hb != nil {
				nw.gossip(i, hb)
			}
		}
	}
	// Epoch 1: a burst of 64 allocations, eight blocks.
	nw.enterRound(1)
	beat()
	for range 64 {
		tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 1}})
		require.NoError(t, err)
		nw.gossip(0, tx)
	}
	for nw.vms[0].Mempool().Len() > 0 {
		_, err := nw.round(0, 10)
		require.NoError(t, err)
	}
	burst := replayKeys()
	require.GreaterOrEqual(t, burst, 64)
	// Epochs 2..5: one allocation a block. The burst expires (lifetime 2),
	// and its entries leave at most 16 per block.
	for r := int64(2); r <= 5; r++ {
		nw.enterRound(r)
		beat()
		for range 3 {
			tx, err := nw.vms[0].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: mine, Count: 1}})
			require.NoError(t, err)
			nw.gossip(0, tx)
			before := replayKeys()
			b, err := nw.round(0, 10)
			require.NoError(t, err)
			require.GreaterOrEqual(t, replayKeys(), before+len(b.Txs)-2*maxTxs, "epoch %d: at most 16 deletions per block", r)
		}
	}
	require.LessOrEqual(t, replayKeys(), 3*(3+2+1), "only the last epochs' transactions remain (burst: %d)", burst)
}

// filler has node i allocate one id of some range it owns and puts it in a
// block: traffic that keeps blocks coming.
func (nw *net) filler(i int) {
	for k := 0; ; k++ {
		tx, err := nw.vms[i].Writer().Allocate(context.Background(), []txs.AllocateEntry{{Range: fmt.Sprintf("filler-%d", k), Count: 1}})
		if err != nil {
			continue // not this node's range (or moving): try another
		}
		nw.gossip(i, tx)
		_, err = nw.round(i, 10)
		require.NoError(nw.t, err)
		return
	}
}

// TestOpeningAtARealClock: the chain opens, and blocks verify on every node,
// with clocks at a real date. The opening block without a P-chain context
// was sealed by its builder without the pruning step that Verify ran, which
// at real epoch numbers writes the replay bound: every other node computed
// another state root, refused the block, and the network split (tests with
// clocks near zero never saw it).
func TestOpeningAtARealClock(t *testing.T) {
	nw := newNetWith(t, 3, livenessGenesis)
	nw.now.Store(advEpoch0*10_000 + 5000)
	nw.ready(10)
	nw.allocateVia(1, nw.rangeOf(1, "real"), 3)
}
