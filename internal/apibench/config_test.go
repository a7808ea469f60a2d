package apibench

import (
	"strings"
	"testing"
)

func TestDefaultsFillEveryUnsetField(t *testing.T) {
	cfg, err := Config{Kubeconfig: "k"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pods != DefaultPods || cfg.Clients != DefaultClients || cfg.Gets != DefaultPods ||
		cfg.Watchers != DefaultWatchers || cfg.Lists != DefaultLists || cfg.PageSize != DefaultPageSize ||
		cfg.Namespace != DefaultNamespace || cfg.ContentType != ContentTypeProtobuf ||
		cfg.QPS != DefaultQPS || cfg.Burst != DefaultBurst || cfg.Targets != DefaultTargets() || cfg.Logger == nil {
		t.Errorf("defaults not filled: %+v", cfg)
	}
	cfg, _ = Config{Kubeconfig: "k", Pods: 200}.withDefaults()
	if cfg.Gets != 200 {
		t.Errorf("gets = %d, want as many as pods (200)", cfg.Gets)
	}
}

func TestConfigNormalizesURLsWithoutTouchingTheCaller(t *testing.T) {
	servers := []string{"https://127.0.0.1:6443/"}
	metrics := []string{"http://127.0.0.1:9090", "http://127.0.0.1:9091/custom"}
	cfg, err := Config{Kubeconfig: "k", Servers: servers, MetricsURLs: metrics}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Servers, ","); got != "https://127.0.0.1:6443" {
		t.Errorf("servers %s", got)
	}
	if got := strings.Join(cfg.MetricsURLs, ","); got != "http://127.0.0.1:9090/metrics,http://127.0.0.1:9091/custom" {
		t.Errorf("metrics URLs %s", got)
	}
	if servers[0] != "https://127.0.0.1:6443/" || metrics[0] != "http://127.0.0.1:9090" {
		t.Errorf("the caller's slices changed: %v %v", servers, metrics)
	}
}

func TestConfigRejectsSettingsThatCannotWork(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no kubeconfig", Config{}, "--kubeconfig"},
		{"negative pods", Config{Kubeconfig: "k", Pods: -1}, "--pods"},
		{"negative clients", Config{Kubeconfig: "k", Clients: -3}, "--clients"},
		{"unknown encoding", Config{Kubeconfig: "k", ContentType: "yaml"}, "--content-type"},
		{"server without scheme", Config{Kubeconfig: "k", Servers: []string{"127.0.0.1:6443"}}, "not a URL"},
		{"metrics without host", Config{Kubeconfig: "k", MetricsURLs: []string{"/metrics"}}, "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "apibench: ") {
				t.Errorf("err = %v, want an apibench error naming %s", err, tt.want)
			}
		})
	}
}

func TestNegativeWatchersSkipTheMeasurement(t *testing.T) {
	cfg, err := Config{Kubeconfig: "k", Watchers: -1}.withDefaults()
	if err != nil || cfg.Watchers != -1 {
		t.Errorf("watchers = %d, %v; want -1 kept", cfg.Watchers, err)
	}
}
