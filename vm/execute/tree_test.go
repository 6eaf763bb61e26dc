package execute_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// node is a block in the randomised tree.
type node struct {
	id       ids.ID
	parent   *node
	children []*node
	height   uint64
	epoch    uint64
	txs      []*txs.Tx
	layer    *state.Layer
	root     ids.ID
	accepted bool
	rejected bool
}

// TestRandomBlockTrees drives random trees of processing blocks (siblings,
// chains of unaccepted blocks, rejects, accepts in every legal order) and
// checks them against a sequential model: no id is issued twice among
// accepted blocks, accepted state equals replaying the accepted blocks in
// order on a fresh database, and rejected blocks leave no trace.
func TestRandomBlockTrees(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runTree(t, seed) })
	}
}

func runTree(t *testing.T, seed uint64) {
	require := require.New(t)
	rng := rand.New(rand.NewPCG(seed, 99))
	w := newWorld(t, 4)
	epochs := []*execute.Membership{
		w.epoch(10, map[int]uint64{0: 1, 1: 1, 2: 1, 3: 1}),
		w.epoch(20, map[int]uint64{0: 2, 1: 1, 2: 1}),
		w.epoch(30, map[int]uint64{0: 2, 1: 1, 2: 1, 3: 3}),
	}
	epochAt := map[uint64]*execute.Membership{}
	for _, e := range epochs {
		epochAt[e.Height()] = e
	}
	ranges := []string{"alpha", "beta", "gamma", "delta", "alpha/band-1", "beta/band-2"}

	db := memdb.New()
	s, err := state.New(db, txs.DefaultLimits())
	require.NoError(err)
	gl, err := s.NewLayer(nil)
	require.NoError(err)
	groot, err := gl.Seal()
	require.NoError(err)
	genesis := &node{id: ids.ID{'g'}, root: groot, accepted: true}
	require.NoError(s.Accept(gl, genesis.id, genesis.id[:]))
	lastAccepted := genesis
	var acceptedChain []*node
	var all []*node
	seen := map[ids.ID]bool{} // every tx ever put in a block
	var stats struct{ pipelined, siblings, relays, rejects, accepts int }

	verify := func(parent *node, epoch uint64, blockTxs []*txs.Tx) (*node, error) {
		var pl *state.Layer
		if !parent.accepted {
			pl = parent.layer
		}
		l, err := s.NewLayer(pl)
		require.NoError(err)
		c := &execute.Context{NetworkID: testNetwork, ChainID: testChain, Limits: txs.DefaultLimits(), Membership: epochAt[epoch], Height: parent.height + 1}
		if err := execute.Block(l, c, blockTxs); err != nil {
			s.Reject(l)
			return nil, err
		}
		root, err := l.Seal()
		require.NoError(err)
		h := sha256.New()
		h.Write(parent.id[:])
		binary.Write(h, binary.BigEndian, rng.Uint64())
		var id ids.ID
		h.Sum(id[:0])
		n := &node{id: id, parent: parent, height: parent.height + 1, epoch: epoch, txs: blockTxs, layer: l, root: root}
		parent.children = append(parent.children, n)
		all = append(all, n)
		return n, nil
	}

	var rejectTree func(n *node)
	rejectTree = func(n *node) {
		if n.rejected || n.accepted {
			return
		}
		n.rejected = true
		for _, c := range n.children {
			rejectTree(c)
		}
	}

	for step := 0; step < 120; step++ {
		var live []*node
		for _, n := range all {
			if !n.accepted && !n.rejected {
				live = append(live, n)
			}
		}
		switch op := rng.IntN(10); {
		case op < 6: // build and verify a child of a live block or of the last accepted
			parent := lastAccepted
			if len(live) > 0 && rng.IntN(3) > 0 {
				parent = live[rng.IntN(len(live))]
			}
			pe := parent.epoch
			ei := slices.IndexFunc(epochs, func(e *execute.Membership) bool { return e.Height() >= pe })
			if ei < 0 {
				ei = len(epochs) - 1
			}
			if pe == epochs[ei].Height() && ei+1 < len(epochs) && rng.IntN(5) == 0 {
				ei++
			}
			e := epochs[ei]
			var blockTxs []*txs.Tx
			for k := rng.IntN(3) + 1; k > 0; k-- {
				r := ranges[rng.IntN(len(ranges))]
				entries := []txs.AllocateEntry{{Range: r, Count: uint64(rng.IntN(5) + 1)}}
				if rng.IntN(8) == 0 {
					entries[0].Floor = uint64(rng.IntN(1000))
				}
				blockTxs = append(blockTxs, w.allocate(e, entries...))
			}
			// Sometimes relay a tx already in this branch: the block must fail.
			relay := rng.IntN(6) == 0 && parent != genesis && len(parent.txs) > 0 && parent.epoch == e.Height() && !parent.accepted
			if relay {
				blockTxs = append(blockTxs, parent.txs[0])
			}
			n, err := verify(parent, e.Height(), blockTxs)
			if relay {
				require.ErrorIs(err, execute.ErrReplay)
				stats.relays++
				continue
			}
			if !parent.accepted {
				stats.pipelined++
			}
			require.NoError(err)
			for _, tx := range n.txs {
				seen[tx.ID()] = true
			}
			// The same txs in a sibling are valid too: siblings are independent.
			if rng.IntN(4) == 0 {
				sib, err := verify(parent, e.Height(), blockTxs)
				require.NoError(err)
				require.Equal(n.root, sib.root, "same parent and txs give the same root")
				stats.siblings++
			}
		case op < 9: // accept a child of the last accepted block, reject its siblings
			var ready []*node
			for _, c := range lastAccepted.children {
				if !c.rejected {
					ready = append(ready, c)
				}
			}
			if len(ready) == 0 {
				continue
			}
			n := ready[rng.IntN(len(ready))]
			require.NoError(s.Accept(n.layer, n.id, n.id[:]))
			n.accepted = true
			for _, sib := range ready {
				if sib != n {
					s.Reject(sib.layer)
					rejectTree(sib)
				}
			}
			lastAccepted = n
			acceptedChain = append(acceptedChain, n)
			stats.accepts++
		default: // reject a random live block with its descendants
			if len(live) == 0 {
				continue
			}
			n := live[rng.IntN(len(live))]
			s.Reject(n.layer)
			rejectTree(n)
			stats.rejects++
		}
	}
	t.Logf("walk: %+v", stats)
	require.Positive(stats.accepts, "the walk accepted nothing")
	require.Positive(stats.pipelined, "no block was verified on an unaccepted parent")
	require.Positive(stats.rejects+stats.siblings, "no competing branch was exercised")

	// Model: replay accepted blocks sequentially with plain maps.
	counters := map[string]uint64{}
	issued := map[string][][2]uint64{}
	acceptedTx := map[ids.ID]bool{}
	for _, n := range acceptedChain {
		for _, tx := range n.txs {
			acceptedTx[tx.ID()] = true
			for _, en := range tx.Unsigned.(*txs.AllocateTx).Entries {
				base := max(counters[en.Range], en.Floor)
				for _, iv := range issued[en.Range] {
					require.False(base < iv[1] && iv[0] < base+en.Count, "id issued twice in %s", en.Range)
				}
				issued[en.Range] = append(issued[en.Range], [2]uint64{base, base + en.Count})
				counters[en.Range] = base + en.Count
			}
			rc, err := s.Accepted().Receipt(tx.ID())
			require.NoError(err)
			require.Equal(n.height, rc.Height)
		}
	}
	for _, r := range ranges {
		got, err := s.Accepted().Counter(r)
		require.NoError(err)
		require.Equal(counters[r], got, "counter of %s", r)
	}
	// Rejected-only txs left no receipt.
	for id := range seen {
		if !acceptedTx[id] {
			_, err := s.Accepted().Receipt(id)
			require.ErrorIs(err, state.ErrNotFound)
		}
	}
	// Replaying the accepted chain on a fresh database gives the same roots
	// and the same bytes, key for key.
	db2 := memdb.New()
	s2, err := state.New(db2, txs.DefaultLimits())
	require.NoError(err)
	g2, err := s2.NewLayer(nil)
	require.NoError(err)
	_, err = g2.Seal()
	require.NoError(err)
	require.NoError(s2.Accept(g2, genesis.id, genesis.id[:]))
	for _, n := range acceptedChain {
		l, err := s2.NewLayer(nil)
		require.NoError(err)
		c := &execute.Context{NetworkID: testNetwork, ChainID: testChain, Limits: txs.DefaultLimits(), Membership: epochAt[n.epoch], Height: n.height}
		require.NoError(execute.Block(l, c, n.txs))
		root, err := l.Seal()
		require.NoError(err)
		require.Equal(n.root, root, "root at height %d", n.height)
		require.NoError(s2.Accept(l, n.id, n.id[:]))
	}
	require.Equal(dump(t, db), dump(t, db2))

	// Reopening restores last accepted, the index and the state.
	s3, err := state.New(db, txs.DefaultLimits())
	require.NoError(err)
	la, err := s3.LastAccepted()
	require.NoError(err)
	require.Equal(lastAccepted.id, la.ID)
	require.Equal(lastAccepted.root, la.Root)
	for _, n := range acceptedChain {
		id, err := s3.BlockIDAtHeight(n.height)
		require.NoError(err)
		require.Equal(n.id, id)
	}
}

func dump(t *testing.T, db *memdb.Database) map[string]string {
	out := map[string]string{}
	it := db.NewIterator()
	defer it.Release()
	for it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	require.NoError(t, it.Error())
	return out
}
