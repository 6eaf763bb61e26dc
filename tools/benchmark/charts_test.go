package benchmark

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSaveChartsSkipsAbsentFailover(t *testing.T) {
	require := require.New(t)
	rep := &Report{Systems: []SystemReport{
		{Name: "legacy", MedianReqPerSec: 900, Rounds: []Summary{{ReqPerSec: 880}, {ReqPerSec: 920}}, Steady: Summary{P50: msec(2), P95: msec(5), P99: msec(8)}},
		{Name: "schain", SChain: true, MedianReqPerSec: 300, Rounds: []Summary{{ReqPerSec: 300}}, Steady: Summary{P50: msec(90), P95: msec(200), P99: msec(400)}},
	}}
	dir := t.TempDir()
	written, err := SaveCharts(dir, rep)
	require.NoError(err)
	require.Equal([]string{filepath.Join(dir, ThroughputFile), filepath.Join(dir, LatencyFile)}, written)

	rep.Systems[1].Failover = &FailoverReport{Ranges: []RangeFailover{{Stall: Stall{Longest: msec(30)}}, {Stall: Stall{Longest: msec(90000), Censored: true}}}}
	written, err = SaveCharts(dir, rep)
	require.NoError(err)
	require.Len(written, 3)
	for _, path := range written {
		f, err := os.Open(path)
		require.NoError(err)
		_, err = png.Decode(f)
		require.NoError(f.Close())
		require.NoError(err, path)
	}
}
