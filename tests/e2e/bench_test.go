//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/tools/benchmark"
	"github.com/s-chain/schain/tools/shadow/legacyraft"
)

// TestG_Bench runs a small `schain bench` on the e2e network and a legacy
// cluster of 3 `schain legacy serve` processes: interleaved steady rounds
// on both, a kill -9 of the legacy leader, the ratio table. The S-Chain kill
// is TestZ_KillOwner's (this network is shared), so S-Chain skips failover.
func TestG_Bench(t *testing.T) {
	require := require.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc, err := benchmark.AttachSChain(network)
	require.NoError(err)
	leg, err := benchmark.StartLegacy(ctx, benchmark.LegacyConfig{
		Binary: filepath.Join(buildDir(), "schain-dev"), Dir: t.TempDir(), Mode: legacyraft.ModeSeaweedFS,
		Nodes: 3, WarmUp: time.Second, Timeout: 5 * time.Second,
	})
	require.NoError(err)
	defer func() { require.NoError(leg.Stop(context.Background())) }()

	s := benchmark.DefaultSettings()
	s.Ranges, s.Clients, s.Rounds, s.RoundDuration, s.FailoverBefore = 8, 8, 2, 2*time.Second, time.Second
	s.RangePrefix = "e2e-bench"
	r, err := benchmark.NewRunner(s, []benchmark.Target{
		{Name: "legacy-seaweedfs", SharedKeySpace: true, FailoverAfter: 5 * time.Second, Cluster: leg},
		{Name: "schain", SChain: true, Network: "e2e", Cluster: sc},
		{Name: "schain-pooled", SChain: true, Network: "e2e", Cluster: sc.Pooled()},
	}, testWriter{t})
	require.NoError(err)
	rep, err := r.Run(ctx)
	require.NoError(err)
	var tables strings.Builder
	require.NoError(benchmark.WriteTables(&tables, rep))
	t.Log("\n" + tables.String())

	legacy := rep.Systems[0]
	require.Positive(legacy.MedianReqPerSec)
	for _, schain := range rep.Systems[1:] {
		require.Positive(schain.MedianReqPerSec, schain.Name)
		require.Zero(schain.Steady.Failures, schain.Name)
		require.Zero(schain.Duplicates.Overlapping, "S-Chain never issues an id twice, pooled or not")
		require.Nil(schain.Failover)
	}
	require.Equal(rep.Systems[1].Duplicates.Allocations, rep.Systems[2].Duplicates.Allocations,
		"the two write paths of one network are checked together")
	f := legacy.Failover
	require.NotNil(f)
	require.Len(f.Ranges, s.Ranges)
	for _, rf := range f.Ranges {
		require.Equal(f.Victim, rf.Owner, "the legacy leader serves every range")
	}
	require.Positive(f.Global.Successes, "a new legacy leader took over")
	require.Contains(tables.String(), "| schain |")
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
