package storebench

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// runner carries one Run's settings and the endpoints still alive.
type runner struct {
	cfg Config
	log *slog.Logger
	// endpoints shrinks when the failover workload kills a member, so that
	// later steps talk only to survivors.
	endpoints []string
}

// Run performs the workloads cfg asks for and reports what it measured. On
// error it still returns the report of the measurements done so far, unless
// the cluster could not be reached at all, when the report is nil.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, log: cfg.Logger, endpoints: slices.Clone(cfg.Endpoints)}
	rep := newReport(cfg)
	if err := r.probe(ctx); err != nil {
		return nil, err
	}
	defer r.cleanup(ctx)
	if cfg.Workload == WorkloadAll && cfg.KillCommand == "" {
		rep.Notes = append(rep.Notes, "failover skipped: no --kill-command to kill the leader with")
	}
	for _, w := range cfg.workloads() {
		switch w {
		case WorkloadPut:
			res, err := r.measurePut(ctx)
			rep.Results = append(rep.Results, res...)
			if err != nil {
				return rep, err
			}
		case WorkloadGet:
			res, err := r.measureGet(ctx)
			rep.Results = append(rep.Results, res...)
			if err != nil {
				return rep, err
			}
		case WorkloadFailover:
			res, err := r.failover(ctx)
			rep.Failover = res
			if err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

func (r *runner) probe(ctx context.Context) error {
	c, err := newClient(r.cfg, r.endpoints)
	if err != nil {
		return err
	}
	defer c.Close()
	return probe(ctx, c)
}

// measure runs one closed-loop measurement with clients workers sharing a
// fresh pool of connections.
func (r *runner) measure(ctx context.Context, name string, clients int,
	op func(ctx context.Context, p pool, w int, rnd *rand.Rand) error) (Result, error) {
	p, err := newPool(r.cfg, r.endpoints, min(r.cfg.Conns, clients))
	if err != nil {
		return Result{}, err
	}
	defer p.close()
	if r.cfg.Total > 0 {
		r.log.Info("measuring", "what", name, "clients", clients, "requests", r.cfg.Total)
	} else {
		r.log.Info("measuring", "what", name, "clients", clients, "duration", r.cfg.Duration)
	}
	res, err := load{
		name:     name,
		workers:  clients,
		total:    r.cfg.Total,
		duration: r.cfg.Duration,
		op: func(ctx context.Context, w int, rnd *rand.Rand) error {
			return op(ctx, p, w, rnd)
		},
	}.run(ctx)
	if err == nil {
		r.log.Info("measured", "what", name, "clients", clients, "ops_per_sec", int(res.Throughput),
			"p50", res.Latency.P50, "p99", res.Latency.P99, "errors", res.Errors)
	}
	return res, err
}

// cleanup deletes every benchmark key from the surviving members. It is best
// effort: a failure leaves keys behind but does not change the measurements.
func (r *runner) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c, err := newClient(r.cfg, r.endpoints)
	if err == nil {
		defer c.Close()
		_, err = c.Delete(ctx, keyPrefix, clientv3.WithPrefix())
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		r.log.Warn("could not delete benchmark keys", "prefix", keyPrefix, "err", err)
	}
}
