package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestManagerFollowsProbesOfAnInstance(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	host, p, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(p)
	probe := func() *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(int32(port))}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", ReadinessProbe: probe(), LivenessProbe: probe(), StartupProbe: probe()},
	}}}
	pod.UID = "u1"
	c := &pod.Spec.Containers[0]
	var failures atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := NewManager(ctx, Config{Runner: &Runner{},
		OnChange:  func(types.UID) {},
		OnFailure: func(*corev1.Pod, string, Kind, string) { failures.Add(1) },
	})
	if m.Ready(pod.UID, c, "c1") || m.Started(pod.UID, c, "c1") {
		t.Fatal("an instance no worker has seen is ready or started")
	}
	m.Sync(pod, host, map[string]ContainerState{"app": {ID: "c1", Running: true, StartedAt: time.Now()}})
	eventually(t, "started and ready", func() bool { return m.Started(pod.UID, c, "c1") && m.Ready(pod.UID, c, "c1") })
	if _, bad := m.Unhealthy(pod.UID, c, "c1"); bad {
		t.Fatal("healthy instance reported unhealthy")
	}
	healthy.Store(false)
	eventually(t, "unready and unhealthy", func() bool {
		kind, bad := m.Unhealthy(pod.UID, c, "c1")
		return !m.Ready(pod.UID, c, "c1") && bad && kind == Liveness
	})
	if failures.Load() == 0 {
		t.Error("no failure was reported")
	}
	// A new instance starts over: not ready until its probes pass.
	healthy.Store(true)
	m.Sync(pod, host, map[string]ContainerState{"app": {ID: "c2", Running: true, StartedAt: time.Now()}})
	eventually(t, "new instance ready", func() bool { return m.Ready(pod.UID, c, "c2") })
	if _, bad := m.Unhealthy(pod.UID, c, "c2"); bad {
		t.Error("new instance inherits the old one's liveness failure")
	}
	m.RemovePod(pod.UID)
	if m.Result(pod.UID, "app", "c2", Readiness) != Unknown {
		t.Error("results survive RemovePod")
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
