package benchmark

import (
	"errors"
	"fmt"
	"image/color"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	shadowplot "github.com/s-chain/schain/tools/shadow/plot"
)

// Files SaveCharts writes.
const (
	ThroughputFile = "throughput.png"
	LatencyFile    = "latency.png"
	StallsFile     = "failover-stalls.png"
)

// palette colours systems in report order (S-Chain is blue wherever it is).
var (
	palette = []color.Color{
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	}
	schainColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
)

func colorOf(r *Report, i int) color.Color {
	if r.Systems[i].SChain {
		return schainColor
	}
	return palette[i%len(palette)]
}

// ThroughputChart is a bar per system of its median req/s, with each
// round's req/s as a dot on the bar.
func ThroughputChart(r *Report) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Steady throughput (median over interleaved rounds)"
	p.Y.Label.Text = "successful requests / s"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	names := make([]string, len(r.Systems))
	var rounds plotter.XYs
	for i, s := range r.Systems {
		names[i] = s.Name
		bars, err := plotter.NewBarChart(plotter.Values{s.MedianReqPerSec}, vg.Points(40))
		if err != nil {
			return nil, err
		}
		bars.Color = colorOf(r, i)
		bars.XMin = float64(i)
		p.Add(bars)
		for _, rd := range s.Rounds {
			rounds = append(rounds, plotter.XY{X: float64(i), Y: rd.ReqPerSec})
		}
	}
	if len(rounds) > 0 {
		dots, err := plotter.NewScatter(rounds)
		if err != nil {
			return nil, err
		}
		dots.Shape = draw.CircleGlyph{}
		p.Add(dots)
		p.Legend.Add("one round", dots)
		p.Legend.Top = true
	}
	p.NominalX(names...)
	return p, nil
}

// LatencyChart plots, per system, p50, p95 and p99 of the steady rounds
// (milliseconds, log scale).
func LatencyChart(r *Report) (*plot.Plot, error) {
	p := logYPlot("Steady latency percentiles", "percentile", "latency (ms, log scale)")
	p.Legend.Top, p.Legend.Left = true, true
	for i, s := range r.Systems {
		pts := plotter.XYs{{X: 50, Y: ms(s.Steady.P50)}, {X: 95, Y: ms(s.Steady.P95)}, {X: 99, Y: ms(s.Steady.P99)}}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		line.Color, points.Color = colorOf(r, i), colorOf(r, i)
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
	}
	return p, nil
}

// logYPlot is a plot with a grid and a logarithmic y axis (values must be
// positive).
func logYPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	return p
}

// errNoFailover: the report has no failover phase to plot.
var errNoFailover = errors.New("report has no failover phase")

// StallsChart plots each range's longest stall after the kill, per system
// (seconds, log scale: stalls span milliseconds to the whole phase);
// censored stalls (never recovered) are drawn as crosses.
func StallsChart(r *Report) (*plot.Plot, error) {
	p := logYPlot("Longest stall per range after kill -9 (x: not recovered by the end)", "range index", "stall (s, log scale)")
	drawn := 0
	for i, s := range r.Systems {
		if s.Failover == nil {
			continue
		}
		var ok, censored plotter.XYs
		for k, rf := range s.Failover.Ranges {
			pt := plotter.XY{X: float64(k), Y: max(rf.Stall.Longest.Seconds(), 1e-3)}
			if rf.Stall.Censored {
				censored = append(censored, pt)
			} else {
				ok = append(ok, pt)
			}
		}
		for _, set := range []struct {
			pts   plotter.XYs
			shape draw.GlyphDrawer
			label string
		}{{ok, draw.CircleGlyph{}, s.Name}, {censored, draw.CrossGlyph{}, s.Name + " (not recovered)"}} {
			if len(set.pts) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(set.pts)
			if err != nil {
				return nil, err
			}
			sc.Color, sc.Shape, sc.Radius = colorOf(r, i), set.shape, vg.Points(3)
			p.Add(sc)
			p.Legend.Add(set.label, sc)
		}
		drawn++
	}
	if drawn == 0 {
		return nil, errNoFailover
	}
	return p, nil
}

func ms(d time.Duration) float64 { return max(d.Seconds()*1000, 1e-3) }

// SaveCharts writes every chart the report has data for into dir and
// returns the paths written.
func SaveCharts(dir string, r *Report) ([]string, error) {
	var written []string
	for _, c := range []struct {
		file string
		make func(*Report) (*plot.Plot, error)
	}{{ThroughputFile, ThroughputChart}, {LatencyFile, LatencyChart}, {StallsFile, StallsChart}} {
		p, err := c.make(r)
		if errors.Is(err, errNoFailover) {
			continue
		}
		if err != nil {
			return written, fmt.Errorf("%s: %w", c.file, err)
		}
		path := filepath.Join(dir, c.file)
		if err := shadowplot.SavePNG(path, p); err != nil {
			return written, fmt.Errorf("%s: %w", path, err)
		}
		written = append(written, path)
	}
	return written, nil
}
