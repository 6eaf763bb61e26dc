package execute_test

import (
	"testing"

	"github.com/ava-labs/avalanchego/ids"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm/execute"
)

var (
	testChain   = ids.ID{'s', 'c', 'h', 'a', 'i', 'n'}
	testNetwork = uint32(1337)
)

// world is a validator population with real BLS keys and the epochs built
// from it.
type world struct {
	t      testing.TB
	keys   []*txstest.Key
	nonce  uint64
	byNode map[ids.NodeID]*txstest.Key
	epochs map[uint64]*execute.Membership
}

func newWorld(t testing.TB, n int) *world {
	keys, err := txstest.NewKeys(t.Name(), n)
	require.NoError(t, err)
	w := &world{t: t, keys: keys, byNode: map[ids.NodeID]*txstest.Key{}, epochs: map[uint64]*execute.Membership{}}
	for _, k := range keys {
		w.byNode[k.NodeID] = k
	}
	return w
}

// set is the validator set at height: the given key indexes with weights.
func (w *world) set(height uint64, members map[int]uint64) *execute.ValidatorSet {
	var vals []execute.Validator
	for i, wt := range members {
		vals = append(vals, execute.Validator{NodeID: w.keys[i].NodeID, Weight: wt, PublicKey: w.keys[i].PublicKey()})
	}
	v, err := execute.NewValidatorSet(height, vals)
	require.NoError(w.t, err)
	return v
}

// epoch registers the membership of every validator of the set at height.
func (w *world) epoch(height uint64, members map[int]uint64) *execute.Membership {
	e := w.set(height, members).All()
	w.epochs[height] = e
	return e
}

func (w *world) ctx(e *execute.Membership, height uint64) *execute.Context {
	return &execute.Context{NetworkID: testNetwork, ChainID: testChain, Limits: txs.DefaultLimits(), Membership: e, Height: height}
}

func (w *world) header(e *execute.Membership, owner ids.NodeID) txs.Header {
	w.nonce++
	return txs.Header{NetworkID: testNetwork, ChainID: testChain, PChainHeight: e.Height(), Fingerprint: e.Fingerprint(), Owner: owner, Nonce: w.nonce}
}

// allocate signs an allocation by the owner of the first entry's range.
func (w *world) allocate(e *execute.Membership, entries ...txs.AllocateEntry) *txs.Tx {
	owner := e.Owner(entries[0].Range)
	tx, err := w.byNode[owner].Sign(&txs.AllocateTx{Header: w.header(e, owner), Entries: entries})
	require.NoError(w.t, err)
	return tx
}

func (w *world) put(e *execute.Membership, ms ...txs.Manifest) *txs.Tx {
	owner := e.Owner(ms[0].Bucket)
	tx, err := w.byNode[owner].Sign(&txs.PutManifestTx{Header: w.header(e, owner), Entries: ms})
	require.NoError(w.t, err)
	return tx
}

// write signs versioned manifest writes by the owner of the first entry's
// bucket.
func (w *world) write(e *execute.Membership, es ...txs.ManifestEntry) *txs.Tx {
	owner := e.Owner(es[0].Bucket)
	tx, err := w.byNode[owner].Sign(&txs.ManifestTx{Header: w.header(e, owner), Entries: es})
	require.NoError(w.t, err)
	return tx
}

// reclaim signs a reclaim by the owner of the first chunk's bucket.
func (w *world) reclaim(e *execute.Membership, refs ...txs.ChunkRef) *txs.Tx {
	owner := e.Owner(refs[0].Bucket())
	tx, err := w.byNode[owner].Sign(&txs.ReclaimTx{Header: w.header(e, owner), Entries: refs})
	require.NoError(w.t, err)
	return tx
}

// rangesOwnedBy returns n ranges that owner owns in e.
func rangesOwnedBy(e *execute.Membership, owner ids.NodeID, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		r := "bucket-" + string(rune('a'+i%26)) + "-" + itoa(i)
		if e.Owner(r) == owner {
			out = append(out, r)
		}
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
