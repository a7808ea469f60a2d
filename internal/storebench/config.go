package storebench

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Workload names a group of measurements that Run can perform.
type Workload string

// The workloads Run understands. WorkloadAll runs put, get and, when a kill
// command is set, failover, in that order: failover goes last because it leaves
// one member dead.
const (
	WorkloadPut      Workload = "put"
	WorkloadGet      Workload = "get"
	WorkloadFailover Workload = "failover"
	WorkloadAll      Workload = "all"
)

// Defaults chosen so that each workload finishes in about 10-20 seconds on a
// two-core machine while still taking thousands of samples.
const (
	DefaultClients      = 64
	DefaultConns        = 8
	DefaultDuration     = 5 * time.Second
	DefaultKeySize      = 32
	DefaultValueSize    = 256
	DefaultKeyspace     = 10000
	DefaultWriteTimeout = 500 * time.Millisecond
)

// keyPrefix isolates benchmark keys from anything else in the cluster; Run
// deletes everything under it when it finishes.
const keyPrefix = "/storebench/"

// Config describes one benchmark run.
type Config struct {
	// Endpoints are the cluster's client URLs; every workload spreads its
	// requests over all of them, as the etcd client does.
	Endpoints []string
	// TLS is the client TLS configuration; nil means plain-text gRPC, which
	// requires Insecure.
	TLS *tls.Config
	// Insecure allows plain-text endpoints; it guards against sending
	// benchmark traffic unencrypted by mistake.
	Insecure bool

	// Workload selects what to measure.
	Workload Workload
	// Clients is the number of concurrent clients for the multi-client
	// measurements and the failover writers.
	Clients int
	// Conns is the number of gRPC connections those clients share.
	Conns int
	// Total, when positive, makes each measurement run this many requests
	// instead of running for Duration.
	Total int
	// Duration is how long each measurement runs when Total is zero. The
	// failover workload always runs by time: half of Duration before the
	// kill, at least Duration after it.
	Duration time.Duration
	// KeySize is the length of each benchmark key in bytes.
	KeySize int
	// ValueSize is the length of each value in bytes.
	ValueSize int
	// Keyspace is how many distinct keys put and get spread over.
	Keyspace int

	// KillCommand is run through sh to kill the leader in the failover
	// workload. {member} is replaced by the leader's member name and
	// {endpoint} by its client URL.
	KillCommand string
	// WriteTimeout bounds each write in the failover workload. A write that
	// takes longer is abandoned and the writer moves on to a new key, so a
	// write stuck on a dead member hides recovery for at most this long.
	// Each write draws its timeout between half of this and all of it.
	WriteTimeout time.Duration
	// RecoveryTimeout is how long the failover workload waits for the first
	// acknowledged write after the kill before giving up.
	RecoveryTimeout time.Duration

	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns a copy of c with zero fields set to their defaults,
// or an error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.Workload == "" {
		c.Workload = WorkloadAll
	}
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Conns == 0 {
		c.Conns = DefaultConns
	}
	// More connections than clients would sit idle.
	c.Conns = min(c.Conns, max(c.Clients, 1))
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.KeySize == 0 {
		c.KeySize = DefaultKeySize
	}
	if c.ValueSize == 0 {
		c.ValueSize = DefaultValueSize
	}
	if c.Keyspace == 0 {
		c.Keyspace = DefaultKeyspace
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.RecoveryTimeout == 0 {
		c.RecoveryTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, c.validate()
}

func (c Config) validate() error {
	switch c.Workload {
	case WorkloadPut, WorkloadGet, WorkloadFailover, WorkloadAll:
	default:
		return fmt.Errorf("storebench: unknown workload %q: use put, get, failover or all", c.Workload)
	}
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("storebench: no endpoints: pass at least one client URL")
	}
	for _, ep := range c.Endpoints {
		if strings.HasPrefix(ep, "http://") && !c.Insecure {
			return fmt.Errorf("storebench: endpoint %s is plain http: pass --insecure to benchmark it without TLS", ep)
		}
	}
	if c.Clients < 1 || c.Conns < 1 {
		return fmt.Errorf("storebench: clients (%d) and conns (%d) must be at least 1", c.Clients, c.Conns)
	}
	if c.Total < 0 || c.Duration < 0 || c.WriteTimeout < 0 || c.RecoveryTimeout < 0 {
		return fmt.Errorf("storebench: total, duration and timeouts must not be negative")
	}
	if c.ValueSize < 1 || c.Keyspace < 1 {
		return fmt.Errorf("storebench: value size (%d) and keyspace (%d) must be at least 1", c.ValueSize, c.Keyspace)
	}
	if min := minKeySize(c.Keyspace); c.KeySize < min {
		return fmt.Errorf("storebench: key size %d cannot hold %d distinct keys under %s: use at least %d",
			c.KeySize, c.Keyspace, keyPrefix, min)
	}
	if c.Workload == WorkloadFailover && c.KillCommand == "" {
		return fmt.Errorf("storebench: the failover workload needs --kill-command to kill the leader, e.g. 'kill -9 $(cat /run/cluster/{member}.pid)'")
	}
	return nil
}

// minKeySize is the shortest key that holds the prefix and every index of a
// keyspace of n keys.
func minKeySize(n int) int {
	return len(keyPrefix) + len("k/") + len(strconv.Itoa(n-1))
}

// workloads expands c.Workload into the workloads to run, in order.
func (c Config) workloads() []Workload {
	if c.Workload != WorkloadAll {
		return []Workload{c.Workload}
	}
	ws := []Workload{WorkloadPut, WorkloadGet}
	if c.KillCommand != "" {
		ws = append(ws, WorkloadFailover)
	}
	return ws
}
