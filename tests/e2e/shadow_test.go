//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/schainrpc"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

// TestF_Shadow compares S-Chain on the real network with an embedded legacy
// raft allocator in SeaweedFS mode: full agreement opens the gate, and after
// cutover with floors S-Chain issues nothing the legacy issued.
func TestF_Shadow(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	legacyCluster, err := legacyraft.StartLocalCluster(ctx, 3, legacyraft.ModeSeaweedFS, t.TempDir())
	require.NoError(err)
	defer func() { require.NoError(legacyCluster.Close()) }()
	leg := legacyraft.NewClient(legacyCluster.Addrs(), 5*time.Second)

	comp := shadow.DefaultConfig()
	comp.LegacySharedKeySpace = true
	// Latency is a benchmark's business (make bench), not this test's: the
	// shared 2-core machine runs three nodes and the legacy cluster, and
	// a slow answer is not a disagreement.
	comp.LateAfter = 0
	comp.Gate.MinRequests, comp.Gate.MinDuration = 150, time.Second
	ranges := shadow.RangeKeys("e2e-shadow", 8)
	runner, err := shadow.NewRunner(shadow.Sides{Legacy: leg, Written: leg, SChain: schainrpc.New(router(t))},
		shadow.RunConfig{Ranges: ranges, Workers: 4, Requests: 300, Count: 3, Timeout: 30 * time.Second, Writes: shadow.WritePipelined}, comp)
	require.NoError(err)
	rep, err := runner.Run(ctx)
	require.NoError(err)
	require.Equal(uint64(300), rep.Agreed, "findings: %v", rep.Counts)
	require.True(rep.Decision.Ready, "reasons: %v", rep.Decision.Reasons)

	// Cutover: every range starts above the highest legacy id ever seen.
	floors := runner.Floors(100)
	side := schainrpc.New(router(t))
	for _, rk := range ranges {
		res, err := side.Allocate(ctx, rk, 5, floors.For(rk))
		require.NoError(err)
		require.GreaterOrEqual(res.Base, floors.For(rk), "range %s starts above every legacy id", rk)
		require.Greater(floors.For(rk), uint64(0))
	}
}
