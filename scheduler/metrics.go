package scheduler

import (
	"errors"
	"fmt"
	"time"

	"cairn/scheduler/queue"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a scheduling attempt, as the metrics label them.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// metrics are the scheduler's Prometheus metrics. Counters and
// histograms survive a new Scheduler on the same registry (a new
// leadership term); the pending-pods gauge follows the running queue.
type metrics struct {
	reg             prometheus.Registerer
	attempts        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	e2e             *prometheus.HistogramVec
	pending         *pendingCollector
}

func newMetrics(reg prometheus.Registerer, q *queue.Queue) (*metrics, error) {
	m := &metrics{
		reg: reg,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_scheduler_schedule_attempts_total",
			Help: "Scheduling attempts by result (scheduled, unschedulable, error) and profile.",
		}, []string{"result", "profile"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_scheduler_scheduling_attempt_duration_seconds",
			Help:    "Duration of a scheduling attempt, from leaving the queue to bound or failed.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"result", "profile"}),
		e2e: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_scheduler_e2e_scheduling_duration_seconds",
			Help:    "Time from the scheduler first seeing a pod to the pod being bound, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
		}, []string{"profile"}),
		pending: &pendingCollector{q: q, desc: prometheus.NewDesc("cairn_scheduler_pending_pods",
			"Pods waiting to be scheduled, by sub-queue (active, backoff, unschedulable).", []string{"queue"}, nil)},
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.attempts, err = register(reg, m.attempts); err != nil {
		return nil, err
	}
	if m.attemptDuration, err = register(reg, m.attemptDuration); err != nil {
		return nil, err
	}
	if m.e2e, err = register(reg, m.e2e); err != nil {
		return nil, err
	}
	return m, nil
}

// registerPending registers the pending-pods gauge of this scheduler's
// queue, replacing a previous scheduler's.
func (m *metrics) registerPending() error {
	if m.reg == nil {
		return nil
	}
	err := m.reg.Register(m.pending)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		m.reg.Unregister(are.ExistingCollector)
		err = m.reg.Register(m.pending)
	}
	if err != nil {
		return fmt.Errorf("scheduler: metrics: %w", err)
	}
	return nil
}

// register registers c, or returns the collector already registered
// under its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("scheduler: metrics: %w", err)
}

func (m *metrics) observe(profile, result string, d time.Duration) {
	m.attempts.WithLabelValues(result, profile).Inc()
	m.attemptDuration.WithLabelValues(result, profile).Observe(d.Seconds())
}

// unregister removes the pending-pods gauge once the scheduler stops, so
// a stopped scheduler reports nothing pending.
//
// The gauge is registered by Run, not New, for the same reason.
func (m *metrics) unregister() {
	if m.reg != nil {
		m.reg.Unregister(m.pending)
	}
}

// pendingCollector reads the queue's sizes at scrape time.
type pendingCollector struct {
	q    *queue.Queue
	desc *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	active, backoff, unschedulable := c.q.Counts()
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(active), "active")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(backoff), "backoff")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(unschedulable), "unschedulable")
}
