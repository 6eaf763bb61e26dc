package vm

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the VM's own Prometheus series, under the "schain" namespace
// of the registry the node gives the chain.
type metrics struct {
	acceptedTxs     *prometheus.CounterVec // by kind
	acceptedEntries *prometheus.CounterVec // by kind
	rejects         *prometheus.CounterVec // by reason
	verifySeconds   prometheus.Histogram
	acceptSeconds   prometheus.Histogram
	mempoolDepth    prometheus.Gauge
	epoch           prometheus.Gauge
	height          prometheus.Gauge
	members         prometheus.Gauge       // of the membership in force at the last accepted block
	pooled          *prometheus.CounterVec // pooled allocations: answered from the pool ("hit") or after waiting for a reservation ("wait")
	// API access (package access.go): labelled by token name, never by
	// the token; "none" when no valid token was presented.
	apiRejects *prometheus.CounterVec // by reason, token
	apiWrites  *prometheus.CounterVec // admitted write requests, by token
	apiPending *prometheus.GaugeVec   // write requests in flight, by token
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns = "schain"
	m := &metrics{
		acceptedTxs:     prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "accepted_txs", Help: "transactions accepted, by kind"}, []string{"kind"}),
		acceptedEntries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "accepted_entries", Help: "entries (allocations, manifests) accepted, by kind"}, []string{"kind"}),
		rejects:         prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rejects", Help: "requests and transactions refused, by reason"}, []string{"reason"}),
		verifySeconds:   prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "verify_seconds", Help: "block verification latency", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		acceptSeconds:   prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "accept_seconds", Help: "block accept (one batch) latency", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
		mempoolDepth:    prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "mempool_txs", Help: "pending transactions"}),
		epoch:           prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "epoch", Help: "newest epoch (P-chain height) seen"}),
		height:          prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "accepted_height", Help: "last accepted block height"}),
		pooled:          prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "pooled_allocations", Help: "pooled allocations, by whether they waited for a reservation"}, []string{"outcome"}),
		members:         prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "members", Help: "validators ranges are pinned to (live members) when the membership last changed"}),
		apiRejects:      prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "api_rejects", Help: "API requests refused by access control and limits, by reason and token name"}, []string{"reason", "token"}),
		apiWrites:       prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "api_writes", Help: "write requests admitted, by token name"}, []string{"token"}),
		apiPending:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "api_pending", Help: "write requests in flight, by token name"}, []string{"token"}),
	}
	for _, c := range []prometheus.Collector{m.acceptedTxs, m.acceptedEntries, m.rejects, m.verifySeconds, m.acceptSeconds, m.mempoolDepth, m.epoch, m.height, m.members, m.pooled, m.apiRejects, m.apiWrites, m.apiPending} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
