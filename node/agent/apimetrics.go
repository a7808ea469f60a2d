package agent

import (
	"cairn/node/apiclient"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	apiServerUpDesc = prometheus.NewDesc("cairn_agent_apiserver_up",
		"Whether the agent counts this API server healthy (1) or has failed over from it (0).",
		[]string{"server", "source"}, nil)
	apiServerCurrentDesc = prometheus.NewDesc("cairn_agent_apiserver_current",
		"1 for the API server the agent's requests go to now, 0 for the others.",
		[]string{"server"}, nil)
)

// balancerCollector reports the API servers the agent knows, their health
// and which one it uses, so an operator can see a node's failovers.
type balancerCollector struct{ b *apiclient.Balancer }

func (c balancerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- apiServerUpDesc
	ch <- apiServerCurrentDesc
}

func (c balancerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.b.Endpoints() {
		source := "learned" // from the kubernetes Service's endpoints
		if e.Configured {
			source = "flag"
		}
		ch <- prometheus.MustNewConstMetric(apiServerUpDesc, prometheus.GaugeValue, boolValue(e.Healthy), e.Host, source)
		ch <- prometheus.MustNewConstMetric(apiServerCurrentDesc, prometheus.GaugeValue, boolValue(e.Current), e.Host)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
