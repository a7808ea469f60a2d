package raftstore

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's Prometheus collectors.
type metrics struct {
	proposalsCommitted prometheus.Counter
	proposalsFailed    prometheus.Counter
	proposeLatency     prometheus.Histogram
	applied            *prometheus.CounterVec
	leaderChanges      prometheus.Counter
	isLeader           prometheus.Gauge
	watchers           prometheus.Gauge
	dbSize             prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		proposalsCommitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_store_proposals_committed_total", Help: "Proposals this replica led to commit."}),
		proposalsFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_store_proposals_failed_total", Help: "Proposals that failed on this replica."}),
		proposeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "cairn_store_propose_duration_seconds", Help: "Time from proposal to applied result (commit and apply latency).",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16)}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_store_applied_total", Help: "Commands applied by the state machine, by type and result."}, []string{"type", "result"}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_store_leader_changes_seen_total", Help: "Leader changes this replica has seen."}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_store_is_leader", Help: "1 when this replica is the ready leader."}),
		watchers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_store_watchers", Help: "Active watches served by this replica."}),
		dbSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_store_db_size_bytes", Help: "Bytes held by the MVCC state, history included."}),
	}
	for _, c := range []prometheus.Collector{m.proposalsCommitted, m.proposalsFailed, m.proposeLatency, m.applied,
		m.leaderChanges, m.isLeader, m.watchers, m.dbSize} {
		_ = reg.Register(c)
	}
	return m
}

func (m *metrics) observeApply(t commandType, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.applied.WithLabelValues(t.String(), result).Inc()
}

// HealthHandler answers /health like etcd: healthy when a leader is known
// and a linearizable read completes.
func (s *Server) HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		reason := ""
		if addr, _ := s.leader(); addr == "" {
			reason = "no leader"
		} else if err := s.linearizableRead(ctx); err != nil {
			reason = "linearizable read failed: " + err.Error()
		} else if s.fsm.noSpace() {
			reason = "NOSPACE alarm active"
		}
		w.Header().Set("Content-Type", "application/json")
		if reason != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"health": boolString(reason == ""), "reason": reason})
	})
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
