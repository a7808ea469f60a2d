package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testMetricsAndHealth(t *testing.T, c *cluster) {
	c.etcdctl(t, "put", "metrics/k", "v")
	client := &http.Client{Timeout: 5 * time.Second}
	leaders := 0
	committed := 0.0
	for _, m := range c.members {
		code, body := httpGet(t, client, "http://"+m.metrics+"/health")
		var health struct {
			Health string `json:"health"`
		}
		if err := json.Unmarshal([]byte(body), &health); err != nil || code != http.StatusOK || health.Health != "true" {
			t.Errorf("GET %s/health = %d %q, want 200 with {\"health\":\"true\"}", m.name, code, body)
		}

		code, body = httpGet(t, client, "http://"+m.metrics+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("GET %s/metrics = %d:\n%s", m.name, code, body)
		}
		samples := parseMetrics(body)
		for _, name := range []string{"cairn_store_proposals_committed_total", "cairn_store_is_leader"} {
			if _, ok := samples[name]; !ok {
				t.Errorf("%s's /metrics has no %s", m.name, name)
			}
		}
		leaders += int(samples["cairn_store_is_leader"])
		committed += samples["cairn_store_proposals_committed_total"]
	}
	if leaders != 1 {
		t.Errorf("cairn_store_is_leader sums to %d over the replicas, want exactly one leader", leaders)
	}
	if committed < 1 {
		t.Errorf("cairn_store_proposals_committed_total sums to %v after a put, want at least 1", committed)
	}
}

// httpGet returns the status code and body of a GET.
func httpGet(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// parseMetrics reads the unlabelled samples of a Prometheus text page.
func parseMetrics(page string) map[string]float64 {
	samples := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			samples[name] = v
		}
	}
	return samples
}
