package benchmark

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFinalityQuantile(t *testing.T) {
	require := require.New(t)
	c := FinalityCounts{Bounds: []float64{0.01, 0.02, 0.04}, Cumulative: []uint64{2, 6, 10}, Count: 10}
	require.Equal(17500*time.Microsecond, c.Quantile(0.5), "rank 5: 3/4 into (10 ms, 20 ms]")
	require.Equal(35*time.Millisecond, c.Quantile(0.9), "rank 9: 3/4 into (20 ms, 40 ms]")
	require.Equal(5*time.Millisecond, c.Quantile(0.1), "rank 1: half of the first bucket, from 0")
	over := FinalityCounts{Bounds: []float64{0.01}, Cumulative: []uint64{1}, Count: 10}
	require.Equal(10*time.Millisecond, over.Quantile(0.5), "above the last bound: the last bound")
	require.Zero(FinalityCounts{}.Quantile(0.5))

	earlier := FinalityCounts{Bounds: c.Bounds, Cumulative: []uint64{1, 2, 3}, Count: 3, Blocks: 100}
	later := FinalityCounts{Bounds: c.Bounds, Cumulative: []uint64{3, 8, 13}, Count: 14, Blocks: 110}
	d := later.Sub(earlier)
	require.Equal([]uint64{2, 6, 10}, d.Cumulative)
	require.Equal(uint64(11), d.Count)
	require.Equal(uint64(10), d.Blocks)
	sum := FinalityCounts{}.Add(d).Add(d)
	require.Equal([]uint64{4, 12, 20}, sum.Cumulative)
	require.Equal(uint64(20), sum.Blocks)

	f := NewFinality(d, time.Second)
	require.Equal(100*time.Millisecond, f.BlockInterval)
	require.Equal(d.Quantile(0.5), f.P50)
	require.InDelta(float64(f.P50)/float64(100*time.Millisecond), f.P50PerBlock, 0.01)
}

// TestScrapeNode reads the histogram, the height and the consensus time
// of one chain from a node's metrics, ignoring another chain's series.
func TestScrapeNode(t *testing.T) {
	require := require.New(t)
	const vm = "avalanche_spVM"
	page := func(chain string, h0, h1, total, height int) string {
		return fmt.Sprintf(`# HELP %[1]s_vm_schain_certificate_latency_seconds x
# TYPE %[1]s_vm_schain_certificate_latency_seconds histogram
%[1]s_vm_schain_certificate_latency_seconds_bucket{chain="%[2]s",le="0.01"} %[3]d
%[1]s_vm_schain_certificate_latency_seconds_bucket{chain="%[2]s",le="0.02"} %[4]d
%[1]s_vm_schain_certificate_latency_seconds_bucket{chain="%[2]s",le="+Inf"} %[5]d
%[1]s_vm_schain_certificate_latency_seconds_sum{chain="%[2]s"} 1
%[1]s_vm_schain_certificate_latency_seconds_count{chain="%[2]s"} %[5]d
%[1]s_vm_schain_certificate_latency_seconds_bucket{chain="other",le="0.01"} 99
%[1]s_vm_schain_certificate_latency_seconds_bucket{chain="other",le="0.02"} 99
%[1]s_vm_schain_certificate_latency_seconds_bucket{chain="other",le="+Inf"} 99
%[1]s_vm_schain_certificate_latency_seconds_sum{chain="other"} 1
%[1]s_vm_schain_certificate_latency_seconds_count{chain="other"} 99
# TYPE %[1]s_vm_schain_accepted_height gauge
%[1]s_vm_schain_accepted_height{chain="%[2]s"} %[6]d
%[1]s_vm_schain_accepted_height{chain="other"} 7
# TYPE avalanche_snowman_blks_accepted_sum gauge
avalanche_snowman_blks_accepted_sum{chain="%[2]s"} 3.5e+09
avalanche_snowman_blks_accepted_sum{chain="other"} 1e+12
# TYPE avalanche_snowman_blks_accepted_count counter
avalanche_snowman_blks_accepted_count{chain="%[2]s"} %[6]d
avalanche_snowman_blks_accepted_count{chain="other"} 9
# TYPE %[1]s_vm_schain_accepted_txs_total counter
%[1]s_vm_schain_accepted_txs_total{chain="%[2]s",kind="allocate"} 30
%[1]s_vm_schain_accepted_txs_total{chain="%[2]s",kind="heartbeat"} 12
%[1]s_vm_schain_accepted_txs_total{chain="other",kind="allocate"} 500
`, vm, chain, h0, h1, total, height)
	}
	var body atomic.Value
	body.Store(page("mine", 3, 5, 6, 42))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, body.Load())
	}))
	defer srv.Close()
	ctx := context.Background()

	got, err := scrapeNode(ctx, srv.URL, "mine")
	require.NoError(err)
	require.Equal(nodeMetrics{
		finality:  FinalityCounts{Bounds: []float64{0.01, 0.02}, Cumulative: []uint64{3, 5}, Count: 6, Blocks: 42},
		consensus: 3500 * time.Millisecond, decided: 42, txs: 42,
	}, got)

	_, err = scrapeNode(ctx, srv.URL, "absent")
	require.ErrorIs(err, errNoFinalityMetrics)
	body.Store("garbage{")
	_, err = scrapeNode(ctx, srv.URL, "mine")
	require.Error(err)
}
