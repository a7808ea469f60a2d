package apiserver

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics are Kubernetes' apiserver_request_* metrics.
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "API requests by verb, group, version, resource, subresource and HTTP code.",
		}, []string{"verb", "group", "version", "resource", "subresource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Latency of API requests other than watches, by verb and resource.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 10, 30, 60},
		}, []string{"verb", "group", "resource", "subresource"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Requests being served: readOnly (get, list, watch) or mutating.",
		}, []string{"request_kind"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.total, m.duration, m.inflight} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}

// observe serves one resource request through next and records it.
func (m *requestMetrics) observe(w http.ResponseWriter, r *http.Request, info requestInfo, next func(http.ResponseWriter)) {
	kind := "mutating"
	switch info.Verb {
	case "get", "list", "watch":
		kind = "readOnly"
	}
	inflight := m.inflight.WithLabelValues(kind)
	inflight.Inc()
	defer inflight.Dec()
	start := time.Now()
	cw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
	next(cw)
	m.total.WithLabelValues(info.Verb, info.Group, info.Version, info.Resource, info.Subresource, strconv.Itoa(cw.code)).Inc()
	if info.Verb != "watch" {
		m.duration.WithLabelValues(info.Verb, info.Group, info.Resource, info.Subresource).Observe(time.Since(start).Seconds())
	}
}

// codeWriter remembers the status code written, and passes on flushes
// and hijacks (watches and log streams need them).
type codeWriter struct {
	http.ResponseWriter
	code int
}

func (c *codeWriter) WriteHeader(code int) {
	c.code = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *codeWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *codeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := c.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("apiserver: the connection cannot be hijacked")
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (c *codeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
