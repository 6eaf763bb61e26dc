package schainrpc_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ava-labs/avalanchego/database/memdb"
	"github.com/ava-labs/avalanchego/ids"
	snowblock "github.com/ava-labs/avalanchego/snow/engine/snowman/block"
	"github.com/ava-labs/avalanchego/snow/validators"
	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/client"
	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/schainrpc"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
	"github.com/s-chain/schain/txs/txstest"
	"github.com/s-chain/schain/vm"
	"github.com/s-chain/schain/vm/builder"
	"github.com/s-chain/schain/vm/chain"
)

type oneSet map[ids.NodeID]*validators.GetValidatorOutput

func (s oneSet) GetValidatorSet(context.Context, uint64, ids.ID) (map[ids.NodeID]*validators.GetValidatorOutput, error) {
	return s, nil
}

// engine plays a one-validator consensus engine: whenever the VM has work it
// builds a block (with P-chain context 10 once the chain is past its first
// block), verifies and accepts it.
func engine(ctx context.Context, t *testing.T, v *vm.VM) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		bctx := &snowblock.Context{PChainHeight: 10}
		for {
			if _, err := v.WaitForEvent(ctx); err != nil {
				return
			}
			b, err := v.BuildBlockWithContext(ctx, bctx)
			if errors.Is(err, builder.ErrNoWork) {
				b, err = v.BuildBlock(ctx)
			}
			if err != nil {
				continue
			}
			if wc, ok := b.(snowblock.WithVerifyContext); ok && b.(*chain.Block).HasPChainHeight {
				err = wc.VerifyWithContext(ctx, bctx)
			} else {
				err = b.Verify(ctx)
			}
			if err == nil {
				err = b.Accept(ctx)
			}
			if err == nil {
				err = v.SetPreference(ctx, b.ID())
			}
			if err != nil {
				t.Errorf("engine: %v", err)
				return
			}
		}
	}()
	return done
}

// TestShadowAgainstInProcessSChain runs the shadow comparison between an
// embedded legacy raft allocator and a real (in-process) S-Chain VM reached
// through its JSON-RPC API, and expects the gate to open.
func TestShadowAgainstInProcessSChain(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	keys, err := txstest.NewKeys(t.Name(), 1)
	require.NoError(err)
	chainID := ids.ID{'s', 'h'}
	v := &vm.VM{}
	require.NoError(v.Init(vm.Config{
		NetworkID: 7, ChainID: chainID, NodeID: keys[0].NodeID, Signer: keys[0].Signer(7, chainID),
		Validators: oneSet{keys[0].NodeID: {NodeID: keys[0].NodeID, Weight: 1, PublicKey: keys[0].PublicKey()}},
	}, memdb.New(), []byte(`{}`)))
	engineCtx, stopEngine := context.WithCancel(ctx)
	done := engine(engineCtx, t, v)
	t.Cleanup(func() { stopEngine(); <-done; require.NoError(v.Shutdown(context.Background())) })
	h, err := v.Handler()
	require.NoError(err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	r, err := client.NewRouter([]string{srv.URL}, chainID.String(), client.DefaultRouterConfig())
	require.NoError(err)
	// The first request makes the chain open its epoch; the router retries
	// NotReady until it has.
	_, err = r.GetMembership(ctx)
	for err != nil && client.IsNotReady(err) && ctx.Err() == nil {
		_, err = r.GetMembership(ctx)
	}
	require.NoError(err)

	legacyCluster, err := legacyraft.StartLocalCluster(ctx, 3, legacyraft.ModeReplicated, t.TempDir())
	require.NoError(err)
	t.Cleanup(func() { require.NoError(legacyCluster.Close()) })

	comp := shadow.DefaultConfig()
	comp.Gate.MinRequests, comp.Gate.MinDuration = 100, 100*time.Millisecond
	// No latency bound: this test is about agreement with a real VM, and
	// under -race on a loaded machine a few answers took over the default
	// second (7 of 200 once); latencies are measured by make bench.
	comp.LateAfter = 0
	runner, err := shadow.NewRunner(shadow.Sides{
		Legacy: legacyraft.NewClient(legacyCluster.Addrs(), 5*time.Second),
		SChain: schainrpc.New(r),
	}, shadow.RunConfig{
		Ranges: shadow.RangeKeys("inproc", 8), Workers: 4, Requests: 200, Count: 2, Timeout: 20 * time.Second,
		Writes: shadow.WriteImmediate,
	}, comp)
	require.NoError(err)
	rep, err := runner.Run(ctx)
	require.NoError(err)
	require.Equal(uint64(200), rep.Requests)
	require.Equal(uint64(200), rep.Agreed, "counts: %v", rep.Counts)
	require.True(rep.Decision.Ready, "reasons: %v", rep.Decision.Reasons)
	require.Equal(uint64(200), rep.Latency[shadow.SideSChain].Count)

	// After cutover with floors, S-Chain starts every range above the legacy.
	floors := runner.Floors(10)
	res, err := schainrpc.New(r).Allocate(ctx, "inproc-0", 1, floors.For("inproc-0"))
	require.NoError(err)
	require.GreaterOrEqual(res.Base, floors.For("inproc-0"))
}
