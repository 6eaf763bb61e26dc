// Package plot draws a shadow.Report as PNG charts for the cutover review:
// the latency CDF of both allocators and the gate's clean window over
// observation time. It reads only the report (bounded: at most 257 latency
// buckets per side and 512 window points), so plotting costs the same for a
// minute's run as for a month's.
//
// Who it is for: the project's developers. It is a tool (tools/: benchmarks,
// workloads, stand-ins, plots): nothing that ships links it (tests/layout).
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/s-chain/schain/operator/shadow"
)

// Default PNG size.
const (
	Width  = 20 * vg.Centimeter
	Height = 12 * vg.Centimeter
)

// File names SaveAll writes.
const (
	LatencyCDFFile      = "latency-cdf.png"
	AgreementWindowFile = "agreement-window.png"
)

var (
	// ErrNoLatency: neither side recorded a latency.
	ErrNoLatency = errors.New("report has no latency buckets")
	// ErrNoWindow: the report has no window series (no observation yet).
	ErrNoWindow = errors.New("report has no window series")
)

var (
	legacyColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	schainColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	resetColor  = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
)

// LatencyCDF plots, per side, the fraction of answers at most a given
// latency (log scale, milliseconds), from the report's histogram buckets:
// each point is a bucket's upper bound, exact to within the histogram's
// resolution (about 19%).
func LatencyCDF(rep shadow.Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Allocation latency CDF"
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "fraction of answers"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	drawn := 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, side := range []struct {
		side  shadow.Side
		name  string
		color color.Color
	}{{shadow.SideLegacy, "legacy", legacyColor}, {shadow.SideSChain, "S-Chain", schainColor}} {
		sum := rep.Latency[side.side]
		if len(sum.Buckets) == 0 {
			continue
		}
		pts := cdfPoints(sum)
		lo, hi = math.Min(lo, pts[0].X), math.Max(hi, pts[len(pts)-1].X)
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("%s latency: %w", side.name, err)
		}
		line.Color = side.color
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s (n=%d, p50 %v, p99 %v)", side.name, sum.Count, round(sum.P50NS), round(sum.P99NS)), line)
		drawn++
	}
	if drawn == 0 {
		return nil, ErrNoLatency
	}
	// A log axis needs a positive, non-empty range: pad by a factor 1.5.
	p.X.Min, p.X.Max = lo/1.5, hi*1.5
	return p, nil
}

// cdfPoints turns buckets into (ms, cumulative fraction) points, starting
// at (min, 0). Log scale needs positive values: latencies are clamped to at
// least 1 ns.
func cdfPoints(sum shadow.LatencySummary) plotter.XYs {
	ms := func(d time.Duration) float64 { return float64(max(d, 1)) / float64(time.Millisecond) }
	pts := make(plotter.XYs, 0, len(sum.Buckets)+1)
	if first := sum.Buckets[0].UpperNS; sum.MinNS < first {
		pts = append(pts, plotter.XY{X: ms(sum.MinNS), Y: 0})
	}
	var total, seen uint64
	for _, b := range sum.Buckets {
		total += b.Count
	}
	for _, b := range sum.Buckets {
		seen += b.Count
		pts = append(pts, plotter.XY{X: ms(b.UpperNS), Y: float64(seen) / float64(total)})
	}
	return pts
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond / 10)
	}
}

// AgreementWindow plots the gate's clean window (requests since the last
// reset) against observation time, with a mark at every point where resets
// happened since the previous point. The x axis is seconds since the first
// point; the series is down-sampled, so a reset shows at the next kept point.
func AgreementWindow(rep shadow.Report) (*plot.Plot, error) {
	if len(rep.Window) == 0 {
		return nil, ErrNoWindow
	}
	p := plot.New()
	p.Title.Text = "Clean agreement window"
	p.X.Label.Text = fmt.Sprintf("observation time since %s (s)", rep.Window[0].At.UTC().Format(time.RFC3339))
	p.Y.Label.Text = "window requests"
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())

	origin := rep.Window[0].At
	window := make(plotter.XYs, len(rep.Window))
	var resets plotter.XYs
	prevResets := rep.Window[0].Resets
	for i, w := range rep.Window {
		x := w.At.Sub(origin).Seconds()
		window[i] = plotter.XY{X: x, Y: float64(w.Requests)}
		if i == 0 && w.Resets > 0 || w.Resets > prevResets {
			resets = append(resets, plotter.XY{X: x, Y: float64(w.Requests)})
		}
		prevResets = w.Resets
	}
	line, err := plotter.NewLine(window)
	if err != nil {
		return nil, fmt.Errorf("window: %w", err)
	}
	line.Color = schainColor
	line.Width = vg.Points(1.5)
	p.Add(line)
	last := rep.Window[len(rep.Window)-1]
	p.Legend.Add(fmt.Sprintf("window (now %d requests over %v)", last.Requests, round(last.DurationNS)), line)
	if len(resets) > 0 {
		marks, err := plotter.NewScatter(resets)
		if err != nil {
			return nil, fmt.Errorf("resets: %w", err)
		}
		marks.Color = resetColor
		marks.Shape = draw.CrossGlyph{}
		marks.Radius = vg.Points(3)
		p.Add(marks)
		p.Legend.Add(fmt.Sprintf("reset (%d in total)", last.Resets), marks)
	}
	if p.X.Max <= p.X.Min { // one point, or all at one instant
		p.X.Max = p.X.Min + 1
	}
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = math.Max(1, p.Y.Min+1)
	}
	return p, nil
}

// WritePNG renders p as a Width x Height PNG.
func WritePNG(w io.Writer, p *plot.Plot) error {
	wt, err := p.WriterTo(Width, Height, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// SavePNG writes p to path as a PNG.
func SavePNG(path string, p *plot.Plot) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	return WritePNG(f, p)
}

// SaveAll writes every chart the report has data for into dir and returns
// the paths written.
func SaveAll(dir string, rep shadow.Report) ([]string, error) {
	var written []string
	for _, chart := range []struct {
		file string
		make func(shadow.Report) (*plot.Plot, error)
		none error
	}{{LatencyCDFFile, LatencyCDF, ErrNoLatency}, {AgreementWindowFile, AgreementWindow, ErrNoWindow}} {
		p, err := chart.make(rep)
		if errors.Is(err, chart.none) {
			continue
		}
		if err != nil {
			return written, err
		}
		path := filepath.Join(dir, chart.file)
		if err := SavePNG(path, p); err != nil {
			return written, fmt.Errorf("%s: %w", path, err)
		}
		written = append(written, path)
	}
	return written, nil
}
