package certifier

import "github.com/prometheus/client_golang/prometheus"

// metrics are the certifier's series (docs/operating/operations.md lists them all).
type metrics struct {
	latency     prometheus.Histogram   // accept to certificate, per block covered
	certified   prometheus.Gauge       // newest certified height
	uncertified prometheus.Gauge       // accepted blocks no certificate covers yet
	rounds      *prometheus.CounterVec // by result: certified, short (no quorum yet)
	refusals    *prometheus.CounterVec // signature requests answered without a usable signature, by reason
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "certificate_latency_seconds", Help: "time from a block's acceptance on this node to the certificate that covers it",
			Buckets: prometheus.ExponentialBuckets(0.005, 1.5, 24),
		}),
		certified:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "certified_height", Help: "height of the newest finality certificate"}),
		uncertified: prometheus.NewGauge(prometheus.GaugeOpts{Name: "uncertified_blocks", Help: "accepted blocks no certificate covers yet"}),
		rounds:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certificate_rounds_total", Help: "signature collection rounds, by result"}, []string{"result"}),
		refusals:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "certificate_signature_refusals_total", Help: "signature requests answered without a usable signature, by reason"}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.latency, m.certified, m.uncertified, m.rounds, m.refusals} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
