package dns

import (
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count a node's DNS answers. They outlive any one server, which
// the agent starts again when the node's podCIDR changes.
type Metrics struct {
	requests *prometheus.CounterVec
}

// NewMetrics makes the metrics and registers them with reg (if not nil).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_dns_requests_total",
		Help: "DNS queries from the node's pods, by who answered (cluster: the node from its caches; upstream: the host's resolvers) and response code; SERVFAIL from upstream means no resolver answered.",
	}, []string{"source", "rcode"})}
	if reg != nil {
		if err := reg.Register(m.requests); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Sources of an answer.
const (
	sourceCluster  = "cluster"
	sourceUpstream = "upstream"
)

func (m *Metrics) observe(source string, rcode int) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(source, dns.RcodeToString[rcode]).Inc()
}
