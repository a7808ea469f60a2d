// Command benchcompare runs the same store workloads, through the same etcd
// client, first against a 3-member etcd cluster and then against a 3-replica
// cairn cluster on loopback once per Raft log store (-cairn-log-stores), and
// prints the results side by side: each cairn variant's value, its ratio to
// etcd and whether it meets the store's performance target. It is a report,
// not a test: it exits non-zero only when a cluster or a workload fails to
// run. Run it from the repository root (make bench does).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"cairn/internal/storebench"
	"cairn/internal/storebench/localcluster"
)

// options are the harness's command-line settings.
type options struct {
	etcdBin, cairnBin string
	only              string
	cairnLogStores    string
	workload          string
	clients           int
	duration          time.Duration
	valueSize         int
	keyspace          int
	jsonOut           string
	keep              bool
}

func main() {
	var o options
	flag.StringVar(&o.etcdBin, "etcd", ".tools/etcd", "etcd binary; built from test/tools/etcd when missing")
	flag.StringVar(&o.cairnBin, "cairn", "bin/cairn", "cairn binary (make build)")
	flag.StringVar(&o.only, "only", "", "run one side only: etcd or cairn (every log store)")
	flag.StringVar(&o.cairnLogStores, "cairn-log-stores", knownLogStores, "comma-separated Raft log stores to run cairn with, one cluster each: boltdb, wal")
	flag.StringVar(&o.workload, "workload", "all", "workload: put, get, failover or all")
	flag.IntVar(&o.clients, "clients", storebench.DefaultClients, "concurrent clients")
	flag.DurationVar(&o.duration, "duration", storebench.DefaultDuration, "length of each measurement")
	flag.IntVar(&o.valueSize, "value-size", storebench.DefaultValueSize, "value length in bytes")
	flag.IntVar(&o.keyspace, "keyspace", storebench.DefaultKeyspace, "distinct keys")
	flag.StringVar(&o.jsonOut, "json", "", "also write both reports as JSON to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the data dirs and logs instead of deleting them")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, o, log); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	stores, err := parseLogStores(o.cairnLogStores)
	if err != nil {
		return err
	}
	sides, err := sidesToRun(o.only, stores)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchcompare-")
	if err != nil {
		return err
	}
	if o.keep {
		log.Info("keeping data dirs and logs", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	reports := map[side]*storebench.Report{}
	var errs []error
	for _, s := range sides {
		rep, err := runSide(ctx, o, s, filepath.Join(dir, s.name()), log)
		if rep != nil {
			reports[s] = rep
			fmt.Printf("\n== %s ==\n", s.label())
			rep.WriteTable(os.Stdout)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.label(), err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	var variants []variant
	for _, s := range cairnSides(stores) {
		variants = append(variants, variant{label: s.label(), report: reports[s]})
	}
	fmt.Printf("\n== cairn vs etcd (3 members each, loopback, plain gRPC, %d clients) ==\n", o.clients)
	etcd := reports[side{flavor: localcluster.Etcd}]
	if err := writeComparison(os.Stdout, compare(etcd, variants, o.clients)); err != nil {
		errs = append(errs, err)
	}
	if o.jsonOut != "" {
		if err := writeJSON(o.jsonOut, reports); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runSide starts one side's cluster, runs the workloads against it and stops
// it, whatever happens.
func runSide(ctx context.Context, o options, s side, dir string, log *slog.Logger) (*storebench.Report, error) {
	bin := o.cairnBin
	if s.flavor == localcluster.Etcd {
		bin = o.etcdBin
		if err := ensureEtcd(ctx, bin, log); err != nil {
			return nil, err
		}
	}
	log.Info("starting cluster", "side", s.name())
	c, err := localcluster.Start(ctx, localcluster.Config{
		Flavor:    s.flavor,
		Binary:    bin,
		Dir:       dir,
		ExtraArgs: s.extraArgs(),
		Logger:    log,
	})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	return storebench.Run(ctx, storebench.Config{
		Endpoints:   c.Endpoints(),
		Insecure:    true,
		Workload:    storebench.Workload(o.workload),
		Clients:     o.clients,
		Duration:    o.duration,
		ValueSize:   o.valueSize,
		Keyspace:    o.keyspace,
		KillCommand: c.KillCommand(),
		Logger:      log.With("side", s.name()),
	})
}

// ensureEtcd builds the pinned etcd from its own module when the binary is
// missing, so that the main module never depends on the etcd server.
func ensureEtcd(ctx context.Context, bin string, log *slog.Logger) error {
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	if bin != ".tools/etcd" {
		return fmt.Errorf("etcd binary %s not found", bin)
	}
	log.Info("building etcd from test/tools/etcd (once)", "out", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-C", "test/tools/etcd", "-buildvcs=false", "-o", "../../../.tools/etcd", ".")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building etcd (run from the repository root): %w", err)
	}
	return nil
}
