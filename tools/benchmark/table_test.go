package benchmark

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWriteTables(t *testing.T) {
	require := require.New(t)
	rep := &Report{Settings: DefaultSettings(), Systems: []SystemReport{
		{Name: "legacy-a", MedianReqPerSec: 2000, MedianIDsPerSec: 8000, Rounds: []Summary{{ReqPerSec: 1990}, {ReqPerSec: 2010}},
			Steady: Summary{P50: msec(2), P95: msec(4), P99: msec(9)}, Duplicates: Duplicates{Allocations: 5000, Overlapping: 7, IDs: 21},
			Failover: &FailoverReport{Victim: "l1", KillAt: msec(5000), End: msec(25000), Threshold: time.Second, Kept: 0,
				Ranges:  []RangeFailover{{Range: "r0", Owner: "l1"}, {Range: "r1", Owner: "l1"}},
				Longest: Stall{Longest: msec(2500)}, LongestVictim: Stall{Longest: msec(2500)}, Global: Stall{Longest: msec(2400)}}},
		{Name: "schain", SChain: true, MedianReqPerSec: 1000, MedianIDsPerSec: 4000, Rounds: []Summary{{ReqPerSec: 1000}},
			Steady: Summary{P50: msec(120), P95: msec(300), P99: 1500 * time.Millisecond}, Duplicates: Duplicates{Allocations: 1234},
			Failover: &FailoverReport{Victim: "node2", KillAt: msec(5000), End: msec(105000), Threshold: 3 * time.Second, Kept: 1,
				Ranges:  []RangeFailover{{Range: "r0", Owner: "node2"}, {Range: "r1", Owner: "node1", Kept: true}},
				Longest: Stall{Longest: msec(100000), Censored: true}, LongestVictim: Stall{Longest: msec(100000), Censored: true},
				LongestOthers: Stall{Longest: msec(250)}, Global: Stall{Longest: msec(300)}}},
	}}
	require.InDelta(0.5, rep.SChainVsLegacy()["schain"]["legacy-a"], 1e-9)
	var b strings.Builder
	require.NoError(WriteTables(&b, rep))
	out := b.String()
	require.Contains(out, "| legacy-a | 2,000 | 8,000 | 2.00ms | 4.00ms | 9.00ms | 0 | 1,990, 2,010 | 0.50x |")
	require.Contains(out, "| schain | 1,000 | 4,000 | 120ms | 300ms | 1.50s | 0 | 1,000 | — |")
	require.Contains(out, "| legacy-a | l1 (owned 2/2) | 20.0s | 1.00s | 0/2 (0%) | 2.50s | — | 2.40s | 21 ids in 7 allocations |")
	require.Contains(out, "| schain | node2 (owned 1/2) | 100s | 3.00s | 1/2 (50%) | ≥ 100s (not recovered) | 250ms | 300ms | 0 of 1,234 allocations |")

	// A second S-Chain system gets its own ratio column.
	rep.Systems = append(rep.Systems, SystemReport{Name: "schain-pooled", SChain: true, MedianReqPerSec: 4000, Rounds: []Summary{{ReqPerSec: 4000}}})
	require.InDelta(2.0, rep.SChainVsLegacy()["schain-pooled"]["legacy-a"], 1e-9)
	b.Reset()
	require.NoError(WriteTables(&b, rep))
	out = b.String()
	require.Contains(out, "| system | req/s | ids/s | p50 | p95 | p99 | failed | req/s per round | schain / system | schain-pooled / system |")
	require.Contains(out, "| legacy-a | 2,000 | 8,000 | 2.00ms | 4.00ms | 9.00ms | 0 | 1,990, 2,010 | 0.50x | 2.00x |")
}

func TestFormatting(t *testing.T) {
	require := require.New(t)
	for x, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 1234567.8: "1,234,568", -4321: "-4,321"} {
		require.Equal(want, Thousands(x))
	}
	for d, want := range map[time.Duration]string{
		850 * time.Microsecond: "850µs", 4200 * time.Microsecond: "4.20ms", 42 * time.Millisecond: "42.0ms",
		1250 * time.Millisecond: "1.25s", 100 * time.Second: "100s", 0: "0.00µs",
	} {
		require.Equal(want, Duration(d))
	}
}

func TestOwnerCountsAndBusiestNode(t *testing.T) {
	require := require.New(t)
	owners := []string{"node2", "node1", "node2", "node3", "", "node1", "node2"}
	require.Equal("node1 2, node2 3, node3 1, unknown 1", ownerCounts(owners))
	require.Equal("node2", BusiestNode(owners))
	require.Equal("a", BusiestNode([]string{"a", "b", "b", "a"}), "ties go to the first seen")
	require.Empty(BusiestNode([]string{"", ""}))
}

// TestFinalityWithoutCertificates: a system whose rounds got no
// certificate shows none, not a latency of zero.
func TestFinalityWithoutCertificates(t *testing.T) {
	rep := &Report{Settings: DefaultSettings(), Systems: []SystemReport{
		{Name: "schain", SChain: true, Finality: NewFinality(FinalityCounts{Bounds: []float64{0.01}, Cumulative: []uint64{0}, Blocks: 20}, 2*time.Second)},
	}}
	var b strings.Builder
	require.NoError(t, WriteTables(&b, rep))
	require.Contains(t, b.String(), "| schain | 20 | 100ms | none | none | — |")
}
