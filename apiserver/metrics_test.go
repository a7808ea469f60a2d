package apiserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestMetricsAreServedToAuthenticatedClients checks /metrics: it needs
// credentials, and counts the requests served.
func TestMetricsAreServedToAuthenticatedClients(t *testing.T) {
	c := newTestCluster(t, 1)
	reg := prometheus.NewRegistry()
	i := c.startAPIWith(0, func(cfg *Config, _ string) {
		cfg.Metrics, cfg.MetricsHandler = reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	})
	cs := c.client(i)
	waitNamespace(t, cs, "default")
	if _, err := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	rc := c.restConfig(i, "admin", "system:masters")
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(c.urls[i] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `apiserver_request_total{code="200",group="",resource="configmaps",subresource="",verb="list",version="v1"}`
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		t.Fatalf("/metrics: %d, missing %s in:\n%.2000s", resp.StatusCode, want, body)
	}
	anon := rest.AnonymousClientConfig(rc)
	ahc, err := rest.HTTPClientFor(anon)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = ahc.Get(c.urls[i] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous /metrics: %d, want 401", resp.StatusCode)
	}
}
