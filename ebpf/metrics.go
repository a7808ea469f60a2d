package ebpf

import (
	"cairn/ebpf/datapath"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the proxy's Prometheus metrics. The datapath gauges and
// write counters are read from the datapath at scrape time.
type metrics struct {
	stats func() datapath.Stats

	services   *prometheus.Desc
	backends   *prometheus.Desc
	fill       *prometheus.Desc
	writes     *prometheus.Desc
	syncErrors prometheus.Counter
	latency    prometheus.Histogram
}

func newMetrics(stats func() datapath.Stats) *metrics {
	return &metrics{
		stats: stats,
		services: prometheus.NewDesc("cairn_ebpf_services",
			"Service frontends (cluster IP, port, protocol) programmed in the BPF maps.", nil, nil),
		backends: prometheus.NewDesc("cairn_ebpf_backends",
			"Backend entries programmed in the BPF maps, over all frontends.", nil, nil),
		fill: prometheus.NewDesc("cairn_ebpf_map_fill_ratio",
			"Used fraction of a BPF map's capacity; raise the map size before it reaches 1.", []string{"map"}, nil),
		writes: prometheus.NewDesc("cairn_ebpf_map_writes_total",
			"BPF map updates and deletes issued; an idempotent resync adds none.", []string{"map", "op"}, nil),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_ebpf_sync_errors_total",
			Help: "Failed attempts to program the BPF maps; they are retried with backoff.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cairn_ebpf_sync_latency_seconds",
			Help:    "Time from the agent seeing an EndpointSlice or Service change to the BPF maps holding it.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	cs := []prometheus.Collector{m, m.syncErrors, m.latency}
	for i, c := range cs {
		if err := r.Register(c); err != nil {
			for _, done := range cs[:i] {
				r.Unregister(done)
			}
			return err
		}
	}
	return nil
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.services
	ch <- m.backends
	ch <- m.fill
	ch <- m.writes
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.stats()
	ch <- prometheus.MustNewConstMetric(m.services, prometheus.GaugeValue, float64(st.Services))
	ch <- prometheus.MustNewConstMetric(m.backends, prometheus.GaugeValue, float64(st.Backends))
	if st.MapSize > 0 {
		ch <- prometheus.MustNewConstMetric(m.fill, prometheus.GaugeValue, float64(st.SvcEntries)/float64(st.MapSize), "services")
		ch <- prometheus.MustNewConstMetric(m.fill, prometheus.GaugeValue, float64(st.BackendEntries)/float64(st.MapSize), "backends")
	}
	w := st.Writes
	ch <- prometheus.MustNewConstMetric(m.writes, prometheus.CounterValue, float64(w.SvcPuts), "services", "update")
	ch <- prometheus.MustNewConstMetric(m.writes, prometheus.CounterValue, float64(w.SvcDeletes), "services", "delete")
	ch <- prometheus.MustNewConstMetric(m.writes, prometheus.CounterValue, float64(w.BackendPuts), "backends", "update")
	ch <- prometheus.MustNewConstMetric(m.writes, prometheus.CounterValue, float64(w.BackendDeletes), "backends", "delete")
}
