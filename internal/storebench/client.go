package storebench

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// newClient connects to endpoints the way any etcd user would. Creating a
// client does not dial: the first request does, so errors show up there.
func newClient(cfg Config, endpoints []string) (*clientv3.Client, error) {
	eps := make([]string, len(endpoints))
	for i, ep := range endpoints {
		eps[i] = withScheme(ep, cfg.TLS != nil)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		TLS:         cfg.TLS,
		DialTimeout: 5 * time.Second,
		// The client logs every retry and reconnect; during the failover
		// workload that is thousands of lines that say nothing new.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("storebench: connecting to %s: %w", strings.Join(eps, ","), err)
	}
	return c, nil
}

// withScheme makes the transport explicit, so that a bare host:port means
// TLS unless TLS is off.
func withScheme(ep string, secure bool) string {
	if strings.Contains(ep, "://") {
		return ep
	}
	if secure {
		return "https://" + ep
	}
	return "http://" + ep
}

// pool is a fixed set of clients that workers share round-robin, so that N
// workers do not need N connections.
type pool []*clientv3.Client

func newPool(cfg Config, endpoints []string, n int) (pool, error) {
	p := make(pool, 0, n)
	for range n {
		c, err := newClient(cfg, endpoints)
		if err != nil {
			p.close()
			return nil, err
		}
		p = append(p, c)
	}
	return p, nil
}

// get returns the client for worker w.
func (p pool) get(w int) *clientv3.Client { return p[w%len(p)] }

func (p pool) close() {
	for _, c := range p {
		c.Close()
	}
}

// probe checks that the cluster answers a linearizable read before any
// measurement starts, so that a wrong endpoint fails fast with a clear error
// instead of counting timeouts.
func probe(ctx context.Context, c *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, keyPrefix+"probe"); err != nil {
		return fmt.Errorf("storebench: cluster at %s does not answer a read within 10s (%w): check the endpoints, and that TLS or --insecure matches the servers",
			strings.Join(c.Endpoints(), ","), err)
	}
	return nil
}
