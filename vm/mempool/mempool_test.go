package mempool_test

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/mempool"
)

func makeTxs(t *testing.T, n int) []*txs.Tx {
	keys, err := txstest.NewKeys(t.Name(), 1)
	require.NoError(t, err)
	out := make([]*txs.Tx, n)
	for i := range out {
		out[i], err = keys[0].Sign(&txs.AllocateTx{
			Header:  txs.Header{NetworkID: 1, ChainID: ids.ID{1}, Owner: keys[0].NodeID, Nonce: uint64(i)},
			Entries: []txs.AllocateEntry{{Range: "r", Count: 1}},
		})
		require.NoError(t, err)
	}
	return out
}

func TestBoundsDedupAndOrder(t *testing.T) {
	require := require.New(t)
	all := makeTxs(t, 5)
	size := len(all[0].Bytes())
	m := mempool.New(mempool.Config{MaxTxs: 3, MaxBytes: 1 << 20})
	for _, tx := range all[:3] {
		require.NoError(m.Add(tx))
	}
	require.ErrorIs(m.Add(all[0]), mempool.ErrDuplicate)
	require.ErrorIs(m.Add(all[3]), mempool.ErrFull)
	require.Equal(3, m.Len())
	require.Equal(3*size, m.Bytes())
	require.Equal([]*txs.Tx{all[0], all[1]}, m.Peek(2, 1<<20))
	require.Equal([]*txs.Tx{all[0]}, m.Peek(10, 2*size-1))

	// Removing one offending tx keeps the others.
	m.Remove(all[1].ID(), ids.ID{'?'})
	require.False(m.Has(all[1].ID()))
	require.True(m.Has(all[2].ID()))
	require.Equal([]*txs.Tx{all[0], all[2]}, m.Peek(10, 1<<20))
	require.NoError(m.Add(all[3]))

	byBytes := mempool.New(mempool.Config{MaxTxs: 100, MaxBytes: 2 * size})
	require.NoError(byBytes.Add(all[0]))
	require.NoError(byBytes.Add(all[1]))
	require.ErrorIs(byBytes.Add(all[2]), mempool.ErrFull)
}

func TestPendingSignal(t *testing.T) {
	require := require.New(t)
	all := makeTxs(t, 2)
	m := mempool.New(mempool.DefaultConfig())
	select {
	case <-m.Pending():
		t.Fatal("empty pool signalled")
	default:
	}
	require.NoError(m.Add(all[0]))
	require.NoError(m.Add(all[1]))
	<-m.Pending() // exactly one token, however many adds
	select {
	case <-m.Pending():
		t.Fatal("second token")
	default:
	}
	m.Signal()
	<-m.Pending()
	m.Remove(all[0].ID(), all[1].ID())
	m.Signal()
	select {
	case <-m.Pending():
		t.Fatal("signalled with nothing pending")
	default:
	}
}

// TestHeartbeatsGoFirstAndFitAFullPool: a loaded node's heartbeat is neither
// refused by its full pool nor stuck behind the backlog.
func TestHeartbeatsGoFirstAndFitAFullPool(t *testing.T) {
	require := require.New(t)
	all := makeTxs(t, 3)
	keys, err := txstest.NewKeys(t.Name()+"/hb", 1)
	require.NoError(err)
	hb, err := keys[0].Sign(&txs.HeartbeatTx{Header: txs.Header{NetworkID: 1, ChainID: ids.ID{1}, Owner: keys[0].NodeID, Round: 7}})
	require.NoError(err)
	m := mempool.New(mempool.Config{MaxTxs: 2, MaxBytes: 1 << 20})
	require.NoError(m.Add(all[0]))
	require.NoError(m.Add(all[1]))
	require.ErrorIs(m.Add(all[2]), mempool.ErrFull)
	require.NoError(m.Add(hb), "a heartbeat fits a full pool")
	require.Equal([]*txs.Tx{hb, all[0]}, m.Peek(2, 1<<20), "and goes first")
	require.ErrorIs(m.Add(all[2]), mempool.ErrFull, "the reserve is for heartbeats only")
}

// TestHeartbeatsAreBoundedPerValidator: one validator's heartbeats take one
// slot per liveness round and at most HeartbeatsPerValidator in all (its
// newest evict its oldest), so a validator flooding heartbeats never takes
// room from another's.
func TestHeartbeatsAreBoundedPerValidator(t *testing.T) {
	require := require.New(t)
	keys, err := txstest.NewKeys(t.Name(), 2)
	require.NoError(err)
	beat := func(k *txstest.Key, round, nonce uint64) *txs.Tx {
		tx, err := k.Sign(&txs.HeartbeatTx{Header: txs.Header{NetworkID: 1, ChainID: ids.ID{1}, Owner: k.NodeID, Round: round, Nonce: nonce}})
		require.NoError(err)
		return tx
	}
	m := mempool.New(mempool.Config{MaxTxs: 1, MaxBytes: 1 << 20})
	attacker, honest := keys[0], keys[1]
	require.NoError(m.Add(beat(attacker, 10, 0)))
	require.ErrorIs(m.Add(beat(attacker, 10, 1)), mempool.ErrDuplicate, "one per validator and epoch, whatever the nonce")
	var flood []*txs.Tx
	for r := uint64(11); r < 40; r++ {
		tx := beat(attacker, r, 0)
		require.NoError(m.Add(tx))
		flood = append(flood, tx)
	}
	require.Equal(mempool.HeartbeatsPerValidator, m.Len())
	for _, tx := range flood[len(flood)-mempool.HeartbeatsPerValidator:] {
		require.True(m.Has(tx.ID()), "the newest stay")
	}
	require.NoError(m.Add(beat(honest, 10, 0)), "another validator's heartbeat still fits")
	require.Equal(mempool.HeartbeatsPerValidator+1, m.Len())
	m.Remove(flood[len(flood)-1].ID())
	require.NoError(m.Add(beat(attacker, 39, 5)), "a removed heartbeat frees its epoch")
}
