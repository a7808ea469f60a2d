package apibench

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// clients are the clientsets a run uses.
type clients struct {
	// workers holds one clientset per concurrent client, each with a rest
	// config and rate limiter of its own, spread round-robin over servers.
	workers []kubernetes.Interface
	// servers holds one clientset per server, for sequential requests and
	// watches.
	servers []kubernetes.Interface
	// urls are the servers' URLs, in the order of servers.
	urls []string
}

// newClients builds the clientsets from the kubeconfig, pointed at each of
// cfg.Servers (or at the kubeconfig's own server).
func newClients(cfg Config) (*clients, error) {
	base, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("apibench: kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	urls := cfg.Servers
	if len(urls) == 0 {
		urls = []string{base.Host}
	}
	c := &clients{urls: urls}
	for _, u := range urls {
		cs, err := kubernetes.NewForConfig(restConfigFor(base, u, cfg))
		if err != nil {
			return nil, fmt.Errorf("apibench: client for %s: %w", u, err)
		}
		c.servers = append(c.servers, cs)
	}
	for i := range cfg.Clients {
		cs, err := kubernetes.NewForConfig(restConfigFor(base, urls[i%len(urls)], cfg))
		if err != nil {
			return nil, fmt.Errorf("apibench: client for %s: %w", urls[i%len(urls)], err)
		}
		c.workers = append(c.workers, cs)
	}
	return c, nil
}

// restConfigFor copies base for one server, with rate limits high enough
// that client-go never throttles the benchmark and the chosen encoding.
func restConfigFor(base *rest.Config, server string, cfg Config) *rest.Config {
	rc := rest.CopyConfig(base)
	rc.Host = server
	rc.QPS, rc.Burst = cfg.QPS, cfg.Burst
	rc.UserAgent = "cairn-apibench"
	if cfg.ContentType == ContentTypeProtobuf {
		rc.ContentType = mediaProtobuf
		rc.AcceptContentTypes = mediaProtobuf + ",application/json"
	}
	return rc
}

// server returns the clientset of server i, wrapping around.
func (c *clients) server(i int) kubernetes.Interface { return c.servers[i%len(c.servers)] }
