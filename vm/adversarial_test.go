package vm_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/api"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/builder"
	"github.com/s-chain/schain/vm/chain"
)

// driver plays the consensus engine for several VMs in adversarial orders:
// competing proposers, blocks built on unaccepted parents, each VM seeing
// blocks in its own order, and a random branch winning each decision.
type driver struct {
	t   *testing.T
	nw  *net
	rng *rand.Rand
	// per VM: block ID -> that VM's instance, verified and undecided
	seen []map[ids.ID]snowman.Block
	// all blocks ever built, by ID (the proposer's instance)
	built map[ids.ID]*chain.Block
}

func (d *driver) deliver(i int, b *chain.Block) {
	if _, ok := d.seen[i][b.ID()]; ok {
		return
	}
	ctx := context.Background()
	last, err := d.nw.vms[i].LastAccepted(ctx)
	require.NoError(d.t, err)
	if p, ok := d.built[b.Parent()]; ok && b.Parent() != last {
		if _, ok := d.seen[i][p.ID()]; !ok {
			d.deliver(i, p) // the engine verifies in topological order
		}
	}
	inst, err := d.nw.vms[i].ParseBlock(ctx, b.Bytes())
	require.NoError(d.t, err)
	if b.HasPChainHeight {
		require.NoError(d.t, inst.(snowblock.WithVerifyContext).VerifyWithContext(ctx, &snowblock.Context{PChainHeight: b.PChainHeight}))
	} else {
		require.NoError(d.t, inst.Verify(ctx))
	}
	d.seen[i][b.ID()] = inst
}

// decide accepts the path from the last accepted block to target on every
// VM and rejects everything that conflicts with it.
func (d *driver) decide(target *chain.Block) {
	ctx := context.Background()
	var path []*chain.Block
	last, err := d.nw.vms[0].LastAccepted(ctx)
	require.NoError(d.t, err)
	for b := target; ; b = d.built[b.Parent()] {
		require.NotNil(d.t, b, "target %s (height %d) does not descend from the last accepted %s", target.ID(), target.Height(), last)
		path = append([]*chain.Block{b}, path...)
		if b.Parent() == last {
			break
		}
	}
	onPath := map[ids.ID]bool{}
	for _, b := range path {
		onPath[b.ID()] = true
	}
	for i := range d.nw.vms {
		for _, b := range path {
			d.deliver(i, b)
		}
		for _, b := range path {
			require.NoError(d.t, d.seen[i][b.ID()].Accept(ctx))
			delete(d.seen[i], b.ID())
		}
		// Everything still undecided that does not descend from target
		// conflicts with the accepted chain.
		for id, inst := range d.seen[i] {
			if !d.descends(id, target.ID()) {
				require.NoError(d.t, inst.Reject(ctx))
				delete(d.seen[i], id)
			}
		}
		require.NoError(d.t, d.nw.vms[i].SetPreference(ctx, target.ID()))
	}
}

func (d *driver) descends(id, ancestor ids.ID) bool {
	for b, ok := d.built[id]; ok; b, ok = d.built[b.Parent()] {
		if b.Parent() == ancestor {
			return true
		}
	}
	return false
}

// TestAdversarialDelivery: all VMs end with identical state and no id is
// issued twice, whatever the delivery order, siblings and pipelining.
func TestAdversarialDelivery(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runAdversarial(t, seed) })
	}
}

func runAdversarial(t *testing.T, seed uint64) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNet(t, 4)
	nw.ready(10)
	d := &driver{t: t, nw: nw, rng: rand.New(rand.NewPCG(seed, 7)), built: map[ids.ID]*chain.Block{}}
	for range nw.vms {
		d.seen = append(d.seen, map[ids.ID]snowman.Block{})
	}
	var ranges [][]string
	for i := range nw.vms {
		ranges = append(ranges, []string{nw.rangeOf(i, fmt.Sprintf("adv%d-a", seed)), nw.rangeOf(i, fmt.Sprintf("adv%d-b", seed))})
	}
	type request struct {
		txID  ids.ID
		index int
	}
	var requests []request
	stats := struct{ siblings, pipelined, undecidedAtDecision int }{}

	for round := 0; round < 12; round++ {
		// Owners submit; gossip reaches a random subset now.
		for i, v := range nw.vms {
			for k := d.rng.IntN(3); k > 0; k-- {
				rk := ranges[i][d.rng.IntN(2)]
				tx, err := v.Writer().Allocate(ctx, []txs.AllocateEntry{{Range: rk, Count: uint64(1 + d.rng.IntN(4))}})
				require.NoError(err)
				requests = append(requests, request{tx.ID(), 0})
				for j, other := range nw.vms {
					if j != i && d.rng.IntN(3) > 0 {
						_ = other.Writer().SubmitTx(tx)
					}
				}
			}
		}
		// Competing proposers, some on unaccepted parents.
		last, err := nw.vms[0].LastAccepted(ctx)
		require.NoError(err)
		var candidates []*chain.Block
		for p := 0; p < 1+d.rng.IntN(3); p++ {
			proposer := d.rng.IntN(len(nw.vms))
			parent := last
			var undecided []ids.ID
			for id := range d.seen[proposer] {
				undecided = append(undecided, id)
			}
			sort.Slice(undecided, func(a, b int) bool { return undecided[a].Compare(undecided[b]) < 0 })
			if len(undecided) > 0 && d.rng.IntN(2) == 0 {
				parent = undecided[d.rng.IntN(len(undecided))]
				stats.pipelined++
			}
			require.NoError(nw.vms[proposer].SetPreference(ctx, parent))
			b, err := nw.vms[proposer].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
			if err != nil {
				require.ErrorIs(err, builder.ErrNoWork)
				continue
			}
			blk := b.(*chain.Block)
			d.built[blk.ID()] = blk
			d.seen[proposer][blk.ID()] = b
			candidates = append(candidates, blk)
		}
		if len(candidates) > 1 {
			stats.siblings++
		}
		// Each VM receives the blocks in its own order.
		for i := range nw.vms {
			order := d.rng.Perm(len(candidates))
			for _, k := range order {
				d.deliver(i, candidates[k])
			}
		}
		if len(candidates) > 0 && d.rng.IntN(4) > 0 {
			before := 0
			for _, s := range d.seen {
				before += len(s)
			}
			d.decide(candidates[d.rng.IntN(len(candidates))])
			stats.undecidedAtDecision += before
		}
	}
	// Drain: everything left pending is built and accepted.
	for k := 0; k < 20; k++ {
		pending := 0
		for _, v := range nw.vms {
			pending += v.Mempool().Len()
		}
		if pending == 0 {
			break
		}
		last, err := nw.vms[0].LastAccepted(ctx)
		require.NoError(err)
		for i := range nw.vms {
			require.NoError(nw.vms[i].SetPreference(ctx, last))
		}
		proposer := k % len(nw.vms)
		b, err := nw.vms[proposer].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
		if err != nil {
			continue
		}
		blk := b.(*chain.Block)
		d.built[blk.ID()] = blk
		d.seen[proposer][blk.ID()] = b
		d.decide(blk)
	}
	t.Logf("walk: %+v, %d requests", stats, len(requests))
	require.Positive(stats.pipelined)

	// Identical state everywhere, and no accepted tx lingers in a pool (a
	// rejected sibling must not bring back what the winner committed).
	var want ids.ID
	for i, v := range nw.vms {
		require.Zero(v.Mempool().Len(), "vm %d", i)
		last, err := v.LastAccepted(ctx)
		require.NoError(err)
		if i == 0 {
			want = last
		}
		require.Equal(want, last, "vm %d", i)
	}
	// Every request accepted exactly once, no overlapping ids.
	type iv struct{ lo, hi uint64 }
	byRange := map[string][]iv{}
	for _, r := range requests {
		rc, err := nw.vms[0].Writer().Receipt(r.txID)
		require.NoError(err)
		require.Equal(api.StatusAccepted, rc.Status, "request %s", r.txID)
		e := rc.Entries[r.index]
		byRange[e.Range] = append(byRange[e.Range], iv{e.Base, e.Base + e.Count})
	}
	for rk, ivs := range byRange {
		sort.Slice(ivs, func(a, b int) bool { return ivs[a].lo < ivs[b].lo })
		for k := 1; k < len(ivs); k++ {
			require.LessOrEqual(ivs[k-1].hi, ivs[k].lo, "ids issued twice in %s", rk)
		}
		for _, v := range nw.vms {
			require.Equal(ivs[len(ivs)-1].hi, counter(t, v, rk))
		}
	}
}
