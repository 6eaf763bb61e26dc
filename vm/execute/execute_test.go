package execute_test

import (
	"testing"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/state"
	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/vm/execute"
)

// fresh returns state with an accepted genesis and an open layer for block 1.
func fresh(t *testing.T) (*state.State, *state.Layer) { return freshB(t) }

func freshB(t testing.TB) (*state.State, *state.Layer) {
	s, err := state.New(memdb.New(), txs.DefaultLimits())
	require.NoError(t, err)
	g, err := s.NewLayer(nil)
	require.NoError(t, err)
	_, err = g.Seal()
	require.NoError(t, err)
	require.NoError(t, s.Accept(g, ids.ID{'g'}, []byte("genesis")))
	l, err := s.NewLayer(nil)
	require.NoError(t, err)
	return s, l
}

func TestAllocateAndFloor(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 3)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1, 2: 1})
	_, l := fresh(t)
	r := rangesOwnedBy(e, w.keys[0].NodeID, 2)
	c := w.ctx(e, 1)

	tx := w.allocate(e, txs.AllocateEntry{Range: r[0], Count: 5}, txs.AllocateEntry{Range: r[0], Count: 2}, txs.AllocateEntry{Range: r[1], Count: 1, Floor: 100})
	ch, err := execute.Tx(l, c, tx)
	require.NoError(err)
	require.Equal([]state.ReceiptEntry{
		{Range: r[0], Base: 0, Count: 5},
		{Range: r[0], Base: 5, Count: 2},
		{Range: r[1], Base: 100, Count: 1},
	}, ch.Receipt.Entries)
	require.NoError(l.Apply(ch))

	// A floor below the counter never moves it down.
	tx2 := w.allocate(e, txs.AllocateEntry{Range: r[1], Count: 3, Floor: 50}, txs.AllocateEntry{Range: r[0], Count: 1, Floor: 7})
	ch, err = execute.Tx(l, c, tx2)
	require.NoError(err)
	require.Equal(uint64(101), ch.Receipt.Entries[0].Base)
	require.Equal(uint64(7), ch.Receipt.Entries[1].Base)
	require.NoError(l.Apply(ch))
	next, err := l.Counter(r[1])
	require.NoError(err)
	require.Equal(uint64(104), next)

	// Overflow is an error, not a wrap.
	tx3 := w.allocate(e, txs.AllocateEntry{Range: r[1], Count: 2, Floor: ^uint64(0) - 1})
	_, err = execute.Tx(l, c, tx3)
	require.ErrorIs(err, execute.ErrCounterOverflow)
}

func TestRejections(t *testing.T) {
	w := newWorld(t, 4)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 2, 2: 3})
	other := w.epoch(20, map[int]uint64{0: 1, 1: 2, 2: 3, 3: 1})
	mine := rangesOwnedBy(e, w.keys[0].NodeID, 1)[0]
	notMine := rangesOwnedBy(e, w.keys[1].NodeID, 1)[0]
	good := w.allocate(e, txs.AllocateEntry{Range: mine, Count: 1})

	sign := func(k int, h txs.Header, entries ...txs.AllocateEntry) *txs.Tx {
		tx, err := w.keys[k].Sign(&txs.AllocateTx{Header: h, Entries: entries})
		require.NoError(t, err)
		return tx
	}
	hdr := w.header(e, w.keys[0].NodeID)
	wrongNet, wrongChain, wrongFP := hdr, hdr, hdr
	wrongNet.NetworkID++
	wrongChain.ChainID = ids.ID{'x'}
	wrongFP.Fingerprint = other.Fingerprint()
	// Key 3 is not a member at epoch 10 but claims to own a range.
	outsider := w.header(e, w.keys[3].NodeID)
	// A signature by key 1 over a tx that names key 0 as owner.
	forged, err := w.keys[1].Sign(&txs.AllocateTx{Header: hdr, Entries: []txs.AllocateEntry{{Range: mine, Count: 1}}})
	require.NoError(t, err)

	tests := []struct {
		name string
		ctx  *execute.Context
		tx   *txs.Tx
		err  error
	}{
		{"non-owner", w.ctx(e, 1), sign(0, hdr, txs.AllocateEntry{Range: mine, Count: 1}, txs.AllocateEntry{Range: notMine, Count: 1}), execute.ErrNotOwner},
		{"wrong epoch", w.ctx(other, 1), good, execute.ErrWrongPChainHeight},
		{"wrong fingerprint", w.ctx(e, 1), sign(0, wrongFP, txs.AllocateEntry{Range: mine, Count: 1}), execute.ErrWrongFingerprint},
		{"bad signature", w.ctx(e, 1), forged, txs.ErrBadSignature},
		{"wrong network", w.ctx(e, 1), sign(0, wrongNet, txs.AllocateEntry{Range: mine, Count: 1}), execute.ErrWrongNetwork},
		{"wrong chain", w.ctx(e, 1), sign(0, wrongChain, txs.AllocateEntry{Range: mine, Count: 1}), execute.ErrWrongChain},
		{"non-member signer", w.ctx(e, 1), sign(3, outsider, txs.AllocateEntry{Range: mine, Count: 1}), execute.ErrNotOwner},
		{"no epoch", &execute.Context{NetworkID: testNetwork, ChainID: testChain, Limits: txs.DefaultLimits()}, good, execute.ErrNoMembership},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, l := fresh(t)
			_, err := execute.Tx(l, tt.ctx, tt.tx)
			require.ErrorIs(t, err, tt.err)
		})
	}

	t.Run("not owner names the owner", func(t *testing.T) {
		_, l := fresh(t)
		_, err := execute.Tx(l, w.ctx(e, 1), sign(0, hdr, txs.AllocateEntry{Range: notMine, Count: 1}))
		var noe *execute.NotOwnerError
		require.ErrorAs(t, err, &noe)
		require.Equal(t, w.keys[1].NodeID, noe.Owner)
		require.Equal(t, notMine, noe.Range)
	})

	t.Run("replay", func(t *testing.T) {
		require := require.New(t)
		_, l := fresh(t)
		c := w.ctx(e, 1)
		require.NoError(execute.Block(l, c, []*txs.Tx{good}))
		_, err := execute.Tx(l, c, good)
		require.ErrorIs(err, execute.ErrReplay)
		// Relayed inside one block, it fails the whole block.
		_, l2 := fresh(t)
		require.ErrorIs(execute.Block(l2, c, []*txs.Tx{good, good}), execute.ErrReplay)
	})
}

func TestManifestNeedsAllocatedChunks(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 3)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1, 2: 1})
	_, l := fresh(t)
	c := w.ctx(e, 1)
	bucket := rangesOwnedBy(e, w.keys[2].NodeID, 1)[0]
	band := bucket + "/band-1"
	// Allocations in a band are made by the band's own owner.
	require.NoError(execute.Block(l, c, []*txs.Tx{
		w.allocate(e, txs.AllocateEntry{Range: bucket, Count: 2}),
		w.allocate(e, txs.AllocateEntry{Range: band, Count: 1, Floor: 40}),
	}))
	obj := txs.Manifest{Bucket: bucket, Key: "a/b.txt", Size: 6, ContentHash: ids.ID{9}, Chunks: []txs.Chunk{
		{Range: bucket, ID: 1, Size: 3}, {Range: band, ID: 40, Size: 3},
	}}
	ch, err := execute.Tx(l, c, w.put(e, obj))
	require.NoError(err)
	require.NoError(l.Apply(ch))
	got, err := l.Manifest(bucket, "a/b.txt")
	require.NoError(err)
	require.Equal(obj, *got)

	unallocated := obj
	unallocated.Key = "c"
	unallocated.Chunks = []txs.Chunk{{Range: bucket, ID: 1, Size: 3}, {Range: band, ID: 41, Size: 3}}
	_, err = execute.Tx(l, c, w.put(e, unallocated))
	require.ErrorIs(err, execute.ErrUnallocatedChunk)
	_, err = l.Manifest(bucket, "c")
	require.ErrorIs(err, state.ErrNotFound)

	// Only the bucket's owner may write its manifests.
	notOwner := rangesOwnedBy(e, w.keys[0].NodeID, 1)[0]
	tx, err := w.keys[2].Sign(&txs.PutManifestTx{Header: w.header(e, w.keys[2].NodeID), Entries: []txs.Manifest{{Bucket: notOwner, Key: "k"}}})
	require.NoError(err)
	_, err = execute.Tx(l, c, tx)
	require.ErrorIs(err, execute.ErrNotOwner)
}

func TestSignatureCacheSkipsOnlyVerifiedTxs(t *testing.T) {
	require := require.New(t)
	w := newWorld(t, 2)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1})
	mine := rangesOwnedBy(e, w.keys[0].NodeID, 1)[0]
	hdr := w.header(e, w.keys[0].NodeID)
	forged, err := w.keys[1].Sign(&txs.AllocateTx{Header: hdr, Entries: []txs.AllocateEntry{{Range: mine, Count: 1}}})
	require.NoError(err)
	good := w.allocate(e, txs.AllocateEntry{Range: mine, Count: 1})

	c := w.ctx(e, 1)
	c.Signatures = execute.NewSignatureCache(4)
	_, l := fresh(t)
	_, err = execute.Tx(l, c, forged)
	require.ErrorIs(err, txs.ErrBadSignature)
	require.False(c.Signatures.Verified(forged.ID()))
	_, err = execute.Tx(l, c, good)
	require.NoError(err)
	require.True(c.Signatures.Verified(good.ID()))
	// Eviction keeps the cache bounded.
	for i := 0; i < 4; i++ {
		c.Signatures.Add(ids.ID{byte(i + 1)})
	}
	require.False(c.Signatures.Verified(good.ID()))
}

// TestTxLifetime: a transaction is valid from the liveness round before the
// one it was signed in (clocks within the skew) to TxLifetime epochs after
// it; a heartbeat only in its own epoch.
func TestTxLifetime(t *testing.T) {
	w := newWorld(t, 2)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1})
	mine := rangesOwnedBy(e, w.keys[0].NodeID, 1)[0]
	signed := func(round uint64) *txs.Tx {
		h := w.header(e, w.keys[0].NodeID)
		h.Round = round
		tx, err := w.keys[0].Sign(&txs.AllocateTx{Header: h, Entries: []txs.AllocateEntry{{Range: mine, Count: 1}}})
		require.NoError(t, err)
		return tx
	}
	at := func(round uint64) *execute.Context {
		c := w.ctx(e, 1)
		c.Round, c.Liveness.TxLifetime = round, 2
		return c
	}
	for _, tt := range []struct {
		signed, block uint64
		err           error
	}{
		{signed: 10, block: 9},
		{signed: 10, block: 10},
		{signed: 10, block: 12},
		{signed: 10, block: 8, err: execute.ErrNotYetValid},
		{signed: 10, block: 13, err: execute.ErrExpired},
		{signed: 0, block: 2},
		{signed: 0, block: 3, err: execute.ErrExpired},
	} {
		_, l := fresh(t)
		_, err := execute.Tx(l, at(tt.block), signed(tt.signed))
		if tt.err == nil {
			require.NoError(t, err, "signed in %d, block in %d", tt.signed, tt.block)
		} else {
			require.ErrorIs(t, err, tt.err, "signed in %d, block in %d", tt.signed, tt.block)
		}
	}
}

// TestBoundTxOnlyAtItsHeight: a transaction bound to a block height
// (txs.Header.BlockHeight) applies in a block of that height and in no
// other, earlier or later; an unbound one at any height. This is what lets
// a new owner re-sign a write that missed the block it was bound to: once
// that height is accepted, the first can never be applied.
func TestBoundTxOnlyAtItsHeight(t *testing.T) {
	w := newWorld(t, 2)
	e := w.epoch(10, map[int]uint64{0: 1, 1: 1})
	mine := rangesOwnedBy(e, w.keys[0].NodeID, 1)[0]
	signed := func(bound uint64) *txs.Tx {
		h := w.header(e, w.keys[0].NodeID)
		h.BlockHeight = bound
		tx, err := w.keys[0].Sign(&txs.AllocateTx{Header: h, Entries: []txs.AllocateEntry{{Range: mine, Count: 1}}})
		require.NoError(t, err)
		return tx
	}
	for _, tt := range []struct {
		bound, block uint64
		err          error
	}{
		{bound: 7, block: 7},
		{bound: 7, block: 6, err: execute.ErrWrongBlockHeight},
		{bound: 7, block: 8, err: execute.ErrWrongBlockHeight},
		{bound: 0, block: 6},
		{bound: 0, block: 8},
	} {
		_, l := fresh(t)
		_, err := execute.Tx(l, w.ctx(e, tt.block), signed(tt.bound))
		if tt.err == nil {
			require.NoError(t, err, "bound to %d, block at %d", tt.bound, tt.block)
		} else {
			require.ErrorIs(t, err, tt.err, "bound to %d, block at %d", tt.bound, tt.block)
		}
	}
}
