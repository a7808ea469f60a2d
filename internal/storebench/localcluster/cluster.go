package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Config describes a cluster to start.
type Config struct {
	// Flavor is the kind of server to run.
	Flavor Flavor
	// Binary is the server executable.
	Binary string
	// Members is the cluster size; 3 when zero.
	Members int
	// Dir receives data dirs, pid files and logs; the caller removes it.
	Dir string
	// StartTimeout bounds how long Start waits for the cluster to take
	// writes; 60 seconds when zero.
	StartTimeout time.Duration
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
	// ExtraArgs are appended to every member's command line, after the
	// flavor's own flags, so that callers can compare server settings (e.g.
	// cairn's --raft-log-store) without a new flavor for each.
	ExtraArgs []string
}

// Cluster is a running cluster of local server processes.
type Cluster struct {
	// Members are the members in name order.
	Members []*Member
	dir     string
	log     *slog.Logger
}

// Start launches every member and waits until each answers and the cluster
// acknowledges a write. On error every process it started is stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Members == 0 {
		cfg.Members = 3
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := os.Stat(cfg.Binary); err != nil {
		return nil, fmt.Errorf("localcluster: %s binary: %w", cfg.Flavor, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	nums, err := freePorts(3 * cfg.Members)
	if err != nil {
		return nil, err
	}
	all := make([]ports, cfg.Members)
	for i := range all {
		all[i] = ports{client: nums[3*i], peer: nums[3*i+1], metrics: nums[3*i+2]}
	}
	c := &Cluster{dir: cfg.Dir, log: cfg.Logger}
	for i := range all {
		args, err := cfg.memberArgs(i, all)
		if err != nil {
			c.Stop()
			return nil, err
		}
		name := cfg.Flavor.memberName(i)
		m := &Member{
			Name:      name,
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", all[i].client),
			LogPath:   filepath.Join(cfg.Dir, name+".log"),
		}
		c.Members = append(c.Members, m)
		if err := m.start(cfg.Binary, args, cfg.Dir); err != nil {
			c.Stop()
			return nil, err
		}
	}
	cfg.Logger.Info("waiting for cluster", "flavor", cfg.Flavor, "members", cfg.Members, "dir", cfg.Dir)
	if err := c.waitReady(ctx, cfg.StartTimeout); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// memberArgs returns the full command line of member i: the flavor's flags,
// then ExtraArgs.
func (cfg Config) memberArgs(i int, all []ports) ([]string, error) {
	args, err := cfg.Flavor.args(cfg.Dir, i, all)
	if err != nil {
		return nil, err
	}
	return append(args, cfg.ExtraArgs...), nil
}

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.Members))
	for i, m := range c.Members {
		eps[i] = m.ClientURL
	}
	return eps
}

// KillCommand returns a shell command that kills member {member} with
// SIGKILL through its pid file, in the form storebench's failover expects.
func (c *Cluster) KillCommand() string {
	return fmt.Sprintf("kill -9 $(cat '%s/{member}.pid')", c.dir)
}

// Stop ends every member that is still running.
func (c *Cluster) Stop() {
	for _, m := range c.Members {
		m.stop(5 * time.Second)
	}
}

// waitReady polls until every member answers a status request and the
// cluster acknowledges a write, failing fast if a member exits.
func (c *Cluster) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	defer cli.Close()
	var last error
	for {
		for _, m := range c.Members {
			if m.Exited() {
				return fmt.Errorf("localcluster: member %s exited during start; log %s ends with:\n%s",
					m.Name, m.LogPath, m.LogTail(2000))
			}
		}
		if last = c.ready(ctx, cli); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("localcluster: cluster not ready after %s (logs in %s): %w", timeout, c.dir, last)
			}
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) ready(ctx context.Context, cli *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, m := range c.Members {
		st, err := cli.Status(ctx, m.ClientURL)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
		if st.Leader == 0 {
			return fmt.Errorf("%s: no leader yet", m.Name)
		}
	}
	if _, err := cli.Put(ctx, "/localcluster/ready", "1"); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
