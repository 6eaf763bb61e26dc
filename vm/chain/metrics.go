package chain

import "github.com/prometheus/client_golang/prometheus"

// metrics are the chain's series (docs/operating/operations.md lists them all).
type metrics struct {
	acceptedTxs     *prometheus.CounterVec // by kind
	acceptedEntries *prometheus.CounterVec // by kind
	invalidBlocks   prometheus.Counter
	verifySeconds   prometheus.Histogram
	acceptSeconds   prometheus.Histogram
	height          prometheus.Gauge
	pChainHeight    prometheus.Gauge
	members         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		acceptedTxs:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accepted_txs_total", Help: "transactions accepted, by kind"}, []string{"kind"}),
		acceptedEntries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "accepted_entries_total", Help: "entries (allocations, manifests) accepted, by kind"}, []string{"kind"}),
		invalidBlocks:   prometheus.NewCounter(prometheus.CounterOpts{Name: "invalid_blocks_total", Help: "blocks that failed verification"}),
		verifySeconds:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "verify_seconds", Help: "block verification latency", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		acceptSeconds:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "accept_seconds", Help: "block accept (one batch) latency", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		height:          prometheus.NewGauge(prometheus.GaugeOpts{Name: "accepted_height", Help: "last accepted block height"}),
		pChainHeight:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "pchain_height", Help: "newest P-chain height seen in a block context"}),
		members:         prometheus.NewGauge(prometheus.GaugeOpts{Name: "members", Help: "validators ranges are pinned to in the membership in force"}),
	}
	for _, c := range []prometheus.Collector{m.acceptedTxs, m.acceptedEntries, m.invalidBlocks, m.verifySeconds, m.acceptSeconds, m.height, m.pChainHeight, m.members} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
