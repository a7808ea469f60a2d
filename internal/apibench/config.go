package apibench

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults sized so that a full run (10,000 pods, 1,000 watchers) finishes
// in a couple of minutes on a two-core machine.
const (
	DefaultNamespace      = "bench"
	DefaultPods           = 10000
	DefaultClients        = 32
	DefaultWatchers       = 1000
	DefaultLists          = 5
	DefaultPageSize       = 500
	DefaultQPS            = 5000
	DefaultBurst          = 10000
	DefaultRequestTimeout = time.Minute
	DefaultWatchTimeout   = 30 * time.Second
	DefaultSampleInterval = time.Second
)

// Content types a run can speak; protobuf is what Kubernetes' own
// components use, JSON what kubectl and most scripts use.
const (
	ContentTypeProtobuf = "protobuf"
	ContentTypeJSON     = "json"
)

// Config describes one benchmark run.
type Config struct {
	// Kubeconfig is the file with the credentials and CA of the cluster.
	Kubeconfig string
	// Servers are the API server URLs to spread clients and watchers over;
	// when empty, the kubeconfig's server is used alone.
	Servers []string
	// Namespace receives the benchmark's pods; it is created when missing.
	Namespace string

	// Pods is the number of pods to create.
	Pods int
	// Clients is the number of concurrent clients that create and get pods.
	Clients int
	// Gets is the number of gets of random pods; Pods when zero.
	Gets int
	// Lists is how many times the whole namespace is listed, once in one
	// response and once in pages of PageSize.
	Lists int
	// PageSize is the limit of each page of the paginated list.
	PageSize int64
	// Watchers is the number of watches that wait for one change;
	// DefaultWatchers when zero, and no watch measurement when negative.
	Watchers int

	// ContentType is ContentTypeProtobuf or ContentTypeJSON.
	ContentType string
	// QPS and Burst set each client's rate limiter; they must be high
	// enough that client-go never throttles the benchmark.
	QPS   float32
	Burst int
	// RequestTimeout bounds each request so that a stuck server cannot hang
	// the run.
	RequestTimeout time.Duration
	// WatchTimeout bounds the wait for every watcher to see the change.
	WatchTimeout time.Duration

	// MetricsURLs are the servers' Prometheus endpoints, read for
	// process_resident_memory_bytes; a URL without a path gets /metrics.
	MetricsURLs []string
	// ServerPIDs are server process IDs, read from /proc when the metrics
	// endpoints are not available.
	ServerPIDs []int
	// SampleInterval is how often memory is sampled during the run.
	SampleInterval time.Duration

	// Keep leaves the pods in place instead of deleting them at the end.
	Keep bool
	// Targets are the limits the report judges against; DefaultTargets
	// when zero.
	Targets Targets
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns cfg with every unset field filled in, or an error
// naming the first setting that cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Kubeconfig == "" {
		return cfg, errors.New("apibench: no kubeconfig: pass --kubeconfig")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Pods == 0 {
		cfg.Pods = DefaultPods
	}
	if cfg.Clients == 0 {
		cfg.Clients = DefaultClients
	}
	if cfg.Gets == 0 {
		cfg.Gets = cfg.Pods
	}
	if cfg.Watchers == 0 {
		cfg.Watchers = DefaultWatchers
	}
	if cfg.Lists == 0 {
		cfg.Lists = DefaultLists
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.ContentType == "" {
		cfg.ContentType = ContentTypeProtobuf
	}
	if cfg.QPS == 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.WatchTimeout == 0 {
		cfg.WatchTimeout = DefaultWatchTimeout
	}
	if cfg.SampleInterval == 0 {
		cfg.SampleInterval = DefaultSampleInterval
	}
	if cfg.Targets == (Targets{}) {
		cfg.Targets = DefaultTargets()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"pods", int64(cfg.Pods)}, {"clients", int64(cfg.Clients)}, {"gets", int64(cfg.Gets)},
		{"lists", int64(cfg.Lists)}, {"page-size", cfg.PageSize}, {"burst", int64(cfg.Burst)}} {
		if c.v < 0 {
			return cfg, fmt.Errorf("apibench: --%s %d: must be positive", c.name, c.v)
		}
	}
	if cfg.ContentType != ContentTypeProtobuf && cfg.ContentType != ContentTypeJSON {
		return cfg, fmt.Errorf("apibench: --content-type %q: use %s or %s", cfg.ContentType, ContentTypeProtobuf, ContentTypeJSON)
	}
	// Cloned so that normalizing never writes into the caller's slices.
	cfg.Servers, cfg.MetricsURLs = slices.Clone(cfg.Servers), slices.Clone(cfg.MetricsURLs)
	for i, s := range cfg.Servers {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			return cfg, fmt.Errorf("apibench: server %q is not a URL such as https://127.0.0.1:6443", s)
		}
		cfg.Servers[i] = strings.TrimSuffix(s, "/")
	}
	for i, s := range cfg.MetricsURLs {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return cfg, fmt.Errorf("apibench: metrics URL %q is not a URL such as http://127.0.0.1:9090/metrics", s)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/metrics"
		}
		cfg.MetricsURLs[i] = u.String()
	}
	return cfg, nil
}
