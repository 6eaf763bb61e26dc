package vm_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	"github.com/ava-labs/avalanchego/snow/consensus/snowman"
	"github.com/ava-labs/avalanchego/snow/engine/common"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/txs"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/builder"
	"github.com/s-chain/schain/vm/chain"
	"github.com/s-chain/schain/vm/config"
	"github.com/s-chain/schain/vm/execute"
	"github.com/s-chain/schain/vm/mempool"
	"github.com/s-chain/schain/vm/vmtest"
)

var (
	chainID  = ids.ID{'s', 'c'}
	subnetID = ids.ID{'s', 'n'}
	genesis  = []byte(`{"timestamp": 1000, "mempool": {"maxTxs": 16, "maxBytes": 1048576}}`)
)

type net struct {
	t       testing.TB
	keys    []*txstest.Key
	sets    vmtest.ValidatorSets
	vms     []*vm.VM
	dbs     []*memdb.Database
	genesis []byte
	// now is every VM's clock, unix milliseconds.
	now atomic.Int64
	// lookups counts the VMs' validator-set lookups of heights outside
	// [10, 20] (the heights the net's blocks use).
	lookups atomic.Int64
	// ahead is how far each VM's clock runs ahead of now, milliseconds
	// (a skewed proposer).
	ahead [8]atomic.Int64
	// regs are the VMs' metrics, the latest start's.
	regs [8]*prometheus.Registry
	// cc is every VM's chain config (nil: the defaults, no write tokens).
	cc *config.ChainConfig
}

// netSource serves the net's validator sets and counts lookups.
type netSource struct{ nw *net }

func (s netSource) GetValidatorSet(ctx context.Context, h uint64, subnet ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	if h < 10 || h > 20 {
		s.nw.lookups.Add(1)
	}
	return s.nw.sets.GetValidatorSet(ctx, h, subnet)
}

// header is a transaction header of node i pinned to (pChainHeight, fp).
func (nw *net) header(i int, pChainHeight uint64, fp ids.ID, nonce uint64) txs.Header {
	return txs.Header{NetworkID: 5, ChainID: chainID, PChainHeight: pChainHeight, Fingerprint: fp, Owner: nw.keys[i].NodeID, Nonce: nonce}
}

func newKeys(t testing.TB, n int) ([]*txstest.Key, error) { return txstest.NewKeys(t.Name(), n) }

func newNet(t testing.TB, n int) *net { return newNetWith(t, n, genesis) }

// newNetWith starts n VMs on genesis g with the clock at 5 s.
func newNetWith(t testing.TB, n int, g []byte) *net {
	return newConfiguredNet(t, n, g, nil)
}

// newConfiguredNet is newNetWith whose VMs run with chain config cc.
func newConfiguredNet(t testing.TB, n int, g []byte, cc *config.ChainConfig) *net {
	g = atGenesis(t, g)
	keys, err := newKeys(t, n)
	require.NoError(t, err)
	all := map[ids.NodeID]*validators.GetValidatorOutput{}
	for _, k := range keys {
		all[k.NodeID] = &validators.GetValidatorOutput{NodeID: k.NodeID, Weight: 10, PublicKey: k.PublicKey()}
	}
	nw := &net{t: t, keys: keys, sets: vmtest.ValidatorSets{10: all, 20: all}, genesis: g, cc: cc}
	nw.now.Store(5000)
	for i := range keys {
		nw.dbs = append(nw.dbs, memdb.New())
		nw.vms = append(nw.vms, nw.start(i))
	}
	return nw
}

// atGenesis gives g every change of execution from its first block, as
// a new chain's genesis has them, unless g schedules its own.
func atGenesis(t testing.TB, g []byte) []byte {
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(g, &fields))
	if _, ok := fields["upgrades"]; ok {
		return g
	}
	u, err := json.Marshal(config.UpgradesAtGenesis())
	require.NoError(t, err)
	fields["upgrades"] = u
	out, err := json.Marshal(fields)
	require.NoError(t, err)
	return out
}

func (nw *net) start(i int) *vm.VM {
	v := &vm.VM{}
	nw.regs[i] = prometheus.NewRegistry()
	require.NoError(nw.t, v.Init(vm.Config{
		NetworkID: 5, ChainID: chainID, SubnetID: subnetID, NodeID: nw.keys[i].NodeID,
		Signer: nw.keys[i].Signer(5, chainID), Validators: netSource{nw}, Registerer: nw.regs[i],
		Clock:       func() time.Time { return time.UnixMilli(nw.now.Load() + nw.ahead[i].Load()) },
		ChainConfig: nw.cc, CurrentValidators: l1Current{nw},
	}, nw.dbs[i], nw.genesis))
	nw.t.Cleanup(func() { require.NoError(nw.t, v.Shutdown(context.Background())) })
	return v
}

// gossip delivers a tx to every other VM.
func (nw *net) gossip(from int, tx *txs.Tx) {
	for j, v := range nw.vms {
		if j != from {
			require.NoError(nw.t, v.Writer().SubmitTx(tx))
		}
	}
}

// deliver parses and verifies blk on every VM and returns each VM's instance.
func (nw *net) deliver(blk snowman.Block, epoch uint64) []snowman.Block {
	ctx := context.Background()
	out := make([]snowman.Block, len(nw.vms))
	for i, v := range nw.vms {
		b, err := v.ParseBlock(ctx, blk.Bytes())
		require.NoError(nw.t, err)
		if wc, ok := b.(snowblock.WithVerifyContext); ok {
			should, err := wc.ShouldVerifyWithContext(ctx)
			require.NoError(nw.t, err)
			if should {
				require.NoError(nw.t, wc.VerifyWithContext(ctx, &snowblock.Context{PChainHeight: epoch}))
				out[i] = b
				continue
			}
		}
		require.NoError(nw.t, b.Verify(ctx))
		out[i] = b
	}
	return out
}

func acceptAll(t testing.TB, bs []snowman.Block) {
	for _, b := range bs {
		require.NoError(t, b.Accept(context.Background()))
	}
}

func (nw *net) ownedBy(i int, n int, e uint64) []string {
	var out []string
	for k := 0; len(out) < n; k++ {
		r := "bucket-" + string(rune('a'+k%26)) + string(rune('a'+k/26%26))
		_, err := nw.vms[i].Writer().Allocate(context.Background(), []txs.AllocateEntry{{Range: r, Count: 1}})
		var noe *execute.NotOwnerError
		if errors.As(err, &noe) {
			continue
		}
		require.NoError(nw.t, err)
		// Undo: this probe tx stays pending, which the caller accounts for.
		out = append(out, r)
	}
	return out
}

func counter(t testing.TB, v *vm.VM, r string) uint64 {
	c, err := v.Chain().State().Counter(r)
	require.NoError(t, err)
	return c
}

func TestMultiVM(t *testing.T) {
	require := require.New(t)
	ctx := context.Background()
	nw := newNet(t, 3)
	v0 := nw.vms[0]

	_, err := v0.BuildBlock(ctx)
	require.ErrorIs(err, builder.ErrNoWork, "nothing is built before anyone asks")
	_, err = v0.Writer().Allocate(ctx, []txs.AllocateEntry{{Range: "r", Count: 1}})
	require.ErrorIs(err, chain.ErrNotReady, "no epoch before any block context")
	msg, err := v0.WaitForEvent(ctx)
	require.NoError(err)
	require.Equal(common.PendingTxs, msg, "the chain asks for its opening blocks")
	nw.ready(10)
	_, err = v0.BuildBlock(ctx)
	require.ErrorIs(err, builder.ErrNoWork, "never builds empty blocks")
	_, err = v0.BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.ErrorIs(err, builder.ErrNoWork, "never builds empty blocks")
	opened, err := v0.LastAccepted(ctx)
	require.NoError(err)

	// Each node allocates its own ranges; probes double as the first txs.
	var ranges [][]string
	for i := range nw.vms {
		ranges = append(ranges, nw.ownedBy(i, 2, 10))
	}
	for i, v := range nw.vms {
		for _, tx := range v.Mempool().Peek(100, 1<<20) {
			if tx.Unsigned.Head().Owner == nw.keys[i].NodeID {
				nw.gossip(i, tx)
			}
		}
	}
	// A non-owner is refused with the owner's name.
	_, err = v0.Writer().Allocate(ctx, []txs.AllocateEntry{{Range: ranges[1][0], Count: 1}})
	var noe *execute.NotOwnerError
	require.ErrorAs(err, &noe)
	require.Equal(nw.keys[1].NodeID, noe.Owner)

	// Pipelined: b2 and b3 verified before b2 is accepted.
	for _, v := range nw.vms {
		require.NoError(v.SetPreference(ctx, opened))
	}
	b2, err := v0.BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(err)
	at2 := nw.deliver(b2, 10)
	tx, err := nw.vms[1].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: ranges[1][0], Count: 5}})
	require.NoError(err)
	nw.gossip(1, tx)
	for _, v := range nw.vms {
		require.NoError(v.SetPreference(ctx, b2.ID()))
	}
	b3, err := nw.vms[2].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(err)
	require.Len(b3.(*chain.Block).Txs, 1, "txs of the processing parent are not repeated")
	at3 := nw.deliver(b3, 10)
	acceptAll(t, at2)
	acceptAll(t, at3)
	for _, v := range nw.vms {
		require.NoError(v.SetPreference(ctx, b3.ID()))
	}

	for i, v := range nw.vms {
		require.Equal(uint64(6), counter(t, v, ranges[1][0]), "vm %d", i)
		require.Equal(uint64(1), counter(t, v, ranges[0][0]), "vm %d", i)
		last, err := v.LastAccepted(ctx)
		require.NoError(err)
		require.Equal(b3.ID(), last)
		rc, err := v.Chain().State().Receipt(tx.ID())
		require.NoError(err)
		require.Equal(uint64(1), rc.Entries[0].Base, "continues after the probe's id 0")
		require.Zero(v.Mempool().Len(), "included txs leave every pool")
	}

	// A tx pinned to epoch 10 is never packed into an epoch-20 block; with
	// only such stale work the builder opens the new epoch with a block of
	// no txs (so owners can re-pin), keeping the tx: the competing epoch-10
	// block carrying it may still win, and here it does.
	tx2, err := v0.Writer().Allocate(ctx, []txs.AllocateEntry{{Range: ranges[0][1], Count: 3}})
	require.NoError(err)
	nw.gossip(0, tx2)
	sa, err := nw.vms[1].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 10})
	require.NoError(err)
	advance, err := nw.vms[2].BuildBlockWithContext(ctx, &snowblock.Context{PChainHeight: 20})
	require.NoError(err)
	require.Empty(advance.(*chain.Block).Txs)
	require.Equal(uint64(20), advance.(*chain.Block).PChainHeight)
	require.True(nw.vms[2].Mempool().Has(tx2.ID()))
	atA := nw.deliver(sa, 10)
	require.NoError(advance.Reject(ctx))
	acceptAll(t, atA)
	for _, v := range nw.vms {
		require.Equal(uint64(1+3), counter(t, v, ranges[0][1]))
	}

	// Restart from the database: same last accepted, same state.
	restarted := nw.start(0)
	last, err := restarted.LastAccepted(ctx)
	require.NoError(err)
	require.Equal(sa.ID(), last)
	require.Equal(uint64(6), counter(t, restarted, ranges[1][0]))

	// Backpressure: a flood past the pool bound gets ErrFull, nothing else.
	full := 0
	for k := 0; k < 160; k++ {
		_, err := nw.vms[1].Writer().Allocate(ctx, []txs.AllocateEntry{{Range: ranges[1][1], Count: 1}})
		if errors.Is(err, mempool.ErrFull) {
			full++
			continue
		}
		require.NoError(err)
	}
	require.Equal(160-16, full)
	require.Equal(16, nw.vms[1].Mempool().Len())
}
