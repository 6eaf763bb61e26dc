package plot

import (
	"bytes"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/s-chain/schain/operator/shadow"
	"github.com/s-chain/schain/operator/shadow/legacy"
)

// sampleReport runs a comparator over synthetic traffic: log-normal-ish
// latencies on both sides and an outage (legacy errors) in the middle that
// resets the gate, over more observations than the window series keeps.
func sampleReport(t *testing.T) shadow.Report {
	cfg := shadow.DefaultConfig()
	cfg.LegacySharedKeySpace = true
	cfg.Gate.MinRequests = 100
	comp, err := shadow.NewComparator(cfg)
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var next uint64 = 1
	for i := range 2000 {
		o := shadow.Observation{
			Request: shadow.Request{Seq: uint64(i + 1), Range: "r", Count: 1},
			At:      t0.Add(time.Duration(i) * 50 * time.Millisecond),
			Legacy:  shadow.LegacySide{Latency: time.Duration(150+i%97*13) * time.Microsecond},
			SChain:  shadow.SChainSide{Latency: time.Duration(900+i%89*71) * time.Microsecond},
		}
		if i >= 700 && i < 900 {
			o.Legacy.Err = legacy.ErrUnavailable
		} else {
			o.Legacy.Result = legacy.Result{First: next, Count: 1, Leader: "m1", Term: 1}
		}
		o.SChain.Result = shadow.SChainResult{Base: next, Count: 1}
		next++
		comp.Observe(o)
	}
	return comp.Report()
}

func requirePNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 5_000, "%s: a chart with text and lines is not this small", path)
	require.Less(t, len(b), 2_000_000, "%s", path)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	bounds := img.Bounds()
	require.Greater(t, bounds.Dx(), 400)
	require.Greater(t, bounds.Dy(), 250)
	require.Less(t, bounds.Dx(), 4000)
}

func TestSaveAllWritesDecodablePNGs(t *testing.T) {
	require := require.New(t)
	rep := sampleReport(t)
	require.LessOrEqual(len(rep.Window), 512)
	require.Positive(rep.Decision.Resets)
	dir := t.TempDir()
	if d := os.Getenv("SHADOW_PLOT_DIR"); d != "" { // keep the charts to look at
		dir = d
	}
	paths, err := SaveAll(dir, rep)
	require.NoError(err)
	require.Equal([]string{filepath.Join(dir, LatencyCDFFile), filepath.Join(dir, AgreementWindowFile)}, paths)
	for _, p := range paths {
		requirePNG(t, p)
	}
}

func TestCDFPoints(t *testing.T) {
	require := require.New(t)
	sum := shadow.LatencySummary{
		Count: 4, MinNS: 500 * time.Microsecond,
		Buckets: []shadow.LatencyBucket{{UpperNS: time.Millisecond, Count: 1}, {UpperNS: 2 * time.Millisecond, Count: 3}},
	}
	pts := cdfPoints(sum)
	require.Len(pts, 3)
	require.Equal(0.5, pts[0].X)
	require.Zero(pts[0].Y)
	require.Equal(1.0, pts[1].X)
	require.Equal(0.25, pts[1].Y)
	require.Equal(1.0, pts[2].Y)
	// A zero latency must not reach the log axis as 0.
	pts = cdfPoints(shadow.LatencySummary{Count: 1, Buckets: []shadow.LatencyBucket{{UpperNS: 0, Count: 1}}})
	require.Positive(pts[0].X)
}

func TestEmptyReport(t *testing.T) {
	require := require.New(t)
	_, err := LatencyCDF(shadow.Report{})
	require.ErrorIs(err, ErrNoLatency)
	_, err = AgreementWindow(shadow.Report{})
	require.ErrorIs(err, ErrNoWindow)
	paths, err := SaveAll(t.TempDir(), shadow.Report{})
	require.NoError(err)
	require.Empty(paths)
}

func TestSinglePointAndOneSide(t *testing.T) {
	require := require.New(t)
	comp, err := shadow.NewComparator(shadow.DefaultConfig())
	require.NoError(err)
	comp.Observe(shadow.Observation{
		Request: shadow.Request{Seq: 1, Range: "r", Count: 1},
		At:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Legacy:  shadow.LegacySide{Result: legacy.Result{First: 1, Count: 1}, Latency: time.Millisecond},
		SChain:  shadow.SChainSide{Missing: true},
	})
	dir := t.TempDir()
	paths, err := SaveAll(dir, comp.Report())
	require.NoError(err)
	require.Len(paths, 2)
	for _, p := range paths {
		requirePNG(t, p)
	}
	var buf bytes.Buffer
	p, err := LatencyCDF(comp.Report())
	require.NoError(err)
	require.NoError(WritePNG(&buf, p))
	_, err = png.Decode(&buf)
	require.NoError(err)
	require.False(errors.Is(err, ErrNoWindow))
}
