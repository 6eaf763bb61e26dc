package benchmark

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var errNoFinalityMetrics = errors.New("finality metrics not found")

// FinalitySource reads a network's finality counters: how long its blocks
// waited between acceptance and a certificate (on each node, summed), and
// how many blocks it has accepted. The runner reads it around each steady
// round of the target, so the figures belong to that target's load.
type FinalitySource interface {
	FinalityCounts(ctx context.Context) (FinalityCounts, error)
}

// FinalityCounts is a cumulative latency histogram and a block count.
type FinalityCounts struct {
	// Bounds are the histogram's upper bounds in seconds, ascending;
	// Cumulative[i] counts the observations at or below Bounds[i], and
	// Count all of them (above the last bound too).
	Bounds     []float64 `json:"bounds"`
	Cumulative []uint64  `json:"cumulative"`
	Count      uint64    `json:"count"`
	// Blocks is the accepted height (of one node).
	Blocks uint64 `json:"blocks"`
}

// Sub is c minus an earlier reading of the same source.
func (c FinalityCounts) Sub(earlier FinalityCounts) FinalityCounts {
	out := FinalityCounts{Bounds: c.Bounds, Cumulative: make([]uint64, len(c.Cumulative))}
	if !slices.Equal(c.Bounds, earlier.Bounds) {
		earlier = FinalityCounts{Blocks: earlier.Blocks}
	}
	for i, n := range c.Cumulative {
		if i < len(earlier.Cumulative) {
			n -= min(n, earlier.Cumulative[i])
		}
		out.Cumulative[i] = n
	}
	out.Count = c.Count - min(c.Count, earlier.Count)
	out.Blocks = c.Blocks - min(c.Blocks, earlier.Blocks)
	return out
}

// Add sums two readings of one histogram (two rounds, or two nodes).
func (c FinalityCounts) Add(o FinalityCounts) FinalityCounts {
	if len(c.Bounds) == 0 {
		c.Bounds = o.Bounds
	}
	out := FinalityCounts{Bounds: c.Bounds, Cumulative: make([]uint64, len(c.Bounds)), Count: c.Count + o.Count, Blocks: c.Blocks + o.Blocks}
	for i := range out.Cumulative {
		if i < len(c.Cumulative) {
			out.Cumulative[i] += c.Cumulative[i]
		}
		if i < len(o.Cumulative) && slices.Equal(c.Bounds, o.Bounds) {
			out.Cumulative[i] += o.Cumulative[i]
		}
	}
	return out
}

// Quantile estimates the q-quantile (0 < q < 1) by linear interpolation
// within its bucket, as Prometheus's histogram_quantile does; 0 without
// observations, the last bound when it falls above it.
func (c FinalityCounts) Quantile(q float64) time.Duration {
	if c.Count == 0 || len(c.Bounds) == 0 {
		return 0
	}
	rank := q * float64(c.Count)
	lower, below := 0.0, uint64(0)
	for i, upper := range c.Bounds {
		n := c.Cumulative[i]
		if float64(n) >= rank {
			in := n - below
			frac := 1.0
			if in > 0 {
				frac = (rank - float64(below)) / float64(in)
			}
			return time.Duration((lower + (upper-lower)*frac) * float64(time.Second))
		}
		lower, below = upper, n
	}
	return time.Duration(c.Bounds[len(c.Bounds)-1] * float64(time.Second))
}

// Finality is what a target's steady rounds made of finality: accept →
// certificate latency on every node, against the interval between blocks.
type Finality struct {
	P50 time.Duration `json:"p50_ns"`
	P90 time.Duration `json:"p90_ns"`
	// Blocks accepted during the rounds, and their mean interval.
	Blocks        uint64        `json:"blocks"`
	BlockInterval time.Duration `json:"block_interval_ns"`
	// P50PerBlock is P50 in block intervals (the target: at most 1).
	P50PerBlock float64        `json:"p50_per_block"`
	Counts      FinalityCounts `json:"counts"`
}

// NewFinality summarizes counts gathered over elapsed.
func NewFinality(c FinalityCounts, elapsed time.Duration) *Finality {
	f := &Finality{P50: c.Quantile(0.5), P90: c.Quantile(0.9), Blocks: c.Blocks, Counts: c}
	if c.Blocks > 0 {
		f.BlockInterval = elapsed / time.Duration(c.Blocks)
		f.P50PerBlock = math.Round(100*float64(f.P50)/float64(f.BlockInterval)) / 100
	}
	return f
}

// Metric names the node exports (with the node's prefix before them).
const (
	latencyMetric = "_vm_schain_certificate_latency_seconds"
	heightMetric  = "_vm_schain_accepted_height"
	// avalanchego's consensus engine: the nanoseconds from issuing each
	// accepted block to accepting it, summed, and their number.
	consensusSumMetric   = "_snowman_blks_accepted_sum"
	consensusCountMetric = "_snowman_blks_accepted_count"
	// The VM's accepted transactions, one series per kind.
	txsMetric = "_vm_schain_accepted_txs_total"
)

// nodeMetrics is what the bench reads from one node for an S-Chain chain.
type nodeMetrics struct {
	finality FinalityCounts
	// consensus is the time the node's accepted blocks spent in consensus,
	// from issue to acceptance, summed over the accepted ones (zero when
	// the node does not export it).
	consensus time.Duration
	decided   uint64
	// txs is the transactions the node accepted, every kind summed.
	txs uint64
}

// FinalityCounts implements FinalitySource: every node's
// certificate_latency_seconds summed, and the first node's accepted
// height, read from each node's /ext/metrics.
func (c *SChainCluster) FinalityCounts(ctx context.Context) (FinalityCounts, error) {
	var sum FinalityCounts
	nodes := c.net.Nodes()
	for i, nd := range nodes {
		m, err := scrapeNode(ctx, nd.URI+"/ext/metrics", c.net.ChainID().String())
		if err != nil {
			return FinalityCounts{}, fmt.Errorf("%s: %w", c.NodeName(nd.NodeID), err)
		}
		got := m.finality
		if i > 0 {
			if !slices.Equal(sum.Bounds, got.Bounds) {
				return FinalityCounts{}, fmt.Errorf("%s: %w: its certificate_latency_seconds buckets differ from %s's (nodes of different versions?)",
					c.NodeName(nd.NodeID), errNoFinalityMetrics, c.NodeName(nodes[0].NodeID))
			}
			got.Blocks = 0
		}
		sum = sum.Add(got)
	}
	return sum, nil
}

// scrapeNode reads chain's series from one node's metrics page at url.
func scrapeNode(ctx context.Context, url, chain string) (nodeMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nodeMetrics{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nodeMetrics{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nodeMetrics{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nodeMetrics{}, fmt.Errorf("GET %s: %w", url, err)
	}
	var (
		out   nodeMetrics
		found bool
	)
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			if !hasLabel(m.GetLabel(), "chain", chain) {
				continue
			}
			switch {
			case strings.HasSuffix(name, latencyMetric) && m.GetHistogram() != nil:
				h := m.GetHistogram()
				found = true
				f := &out.finality
				f.Count = h.GetSampleCount()
				f.Bounds, f.Cumulative = nil, nil
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), 1) {
						continue
					}
					f.Bounds = append(f.Bounds, b.GetUpperBound())
					f.Cumulative = append(f.Cumulative, b.GetCumulativeCount())
				}
			case strings.HasSuffix(name, heightMetric) && m.GetGauge() != nil:
				out.finality.Blocks = uint64(m.GetGauge().GetValue())
			case strings.HasSuffix(name, consensusSumMetric) && m.GetGauge() != nil:
				out.consensus = time.Duration(m.GetGauge().GetValue())
			case strings.HasSuffix(name, consensusCountMetric) && m.GetCounter() != nil:
				out.decided = uint64(m.GetCounter().GetValue())
			case strings.HasSuffix(name, txsMetric) && m.GetCounter() != nil:
				out.txs += uint64(m.GetCounter().GetValue())
			}
		}
	}
	if !found {
		return nodeMetrics{}, fmt.Errorf("%w at %s (chain %s, a series ending in %s)", errNoFinalityMetrics, url, chain, latencyMetric)
	}
	return out, nil
}

func hasLabel(labels []*dto.LabelPair, name, value string) bool {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}
