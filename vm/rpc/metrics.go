package rpc

import "github.com/prometheus/client_golang/prometheus"

// metrics are the API's series, labelled by token name, never by the token;
// "none" when no valid token was presented (docs/operating/operations.md).
type metrics struct {
	apiRejects *prometheus.CounterVec // by reason, token
	apiWrites  *prometheus.CounterVec // admitted write requests, by token
	apiPending *prometheus.GaugeVec   // write requests in flight, by token
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		apiRejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "api_rejects_total", Help: "API requests refused by access control and limits, by reason and token name"}, []string{"reason", "token"}),
		apiWrites:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "api_writes_total", Help: "write requests admitted, by token name"}, []string{"token"}),
		apiPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "api_pending", Help: "write requests in flight, by token name"}, []string{"token"}),
	}
	for _, c := range []prometheus.Collector{m.apiRejects, m.apiWrites, m.apiPending} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
