// Command podbench measures pod startup latency on a local `cairn dev`
// cluster (three servers, two agents in network namespaces): it creates
// pods of the demo image with small requests through client-go from
// several concurrent creators (all at once, or paced at -rate pods per
// second, as Kubernetes' density tests create their latency pods),
// watches them, and prints the p50 and p99
// of the time from the create call to the pod seen Running and seen
// Ready, and the pods started per second.
//
//	sudo go run ./test/podbench -pods 100 -creators 10
//
// The agents of `cairn dev` run the embedded runtime, so that is the
// runtime measured. It is a report, not a test: it exits non-zero only
// when the cluster or the measurement fails to run. It needs root (the
// agents need network namespaces, cgroups and eBPF), and no other
// `cairn dev` cluster may run on the machine. Run it from the repository
// root after make build.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// options are the harness's command-line settings.
type options struct {
	cairnBin string
	pods     int
	creators int
	rate     float64
	probe    bool
	warmup   bool
	timeout  time.Duration
	keep     bool
	verbose  bool
}

func main() {
	var o options
	flag.StringVar(&o.cairnBin, "cairn", "bin/cairn", "cairn binary (make build)")
	flag.IntVar(&o.pods, "pods", 100, "pods to create")
	flag.IntVar(&o.creators, "creators", 10, "concurrent clients creating pods")
	flag.Float64Var(&o.rate, "rate", 0, "create at most this many pods per second (0: all at once, as fast as the creators go)")
	flag.BoolVar(&o.probe, "probe", true, "give the pods the demo's HTTP readiness probe (else Ready follows the container start)")
	flag.BoolVar(&o.warmup, "warmup", true, "start and delete one pod per node before measuring, so first-use costs stay out")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.BoolVar(&o.keep, "keep", false, "keep the state directory (data, logs) instead of deleting it")
	flag.BoolVar(&o.verbose, "v", false, "log progress and client-go's messages")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if !o.verbose {
		// client-go reports through klog; keep the report readable.
		klog.SetSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	if o.pods < 1 || o.creators < 1 || o.rate < 0 {
		fmt.Fprintln(os.Stderr, "podbench: -pods and -creators must be at least 1, and -rate not negative")
		os.Exit(2)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "podbench: needs root: the agents of `cairn dev` need network namespaces, cgroups and eBPF; run it with sudo")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := run(ctx, o, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "podbench:", err)
		cancel()
		stop()
		os.Exit(1)
	}
}

// run starts the cluster, measures it, prints the report to out and stops
// the cluster, whatever happens.
func run(ctx context.Context, o options, out io.Writer, log *slog.Logger) error {
	dir, err := os.MkdirTemp("", "podbench-")
	if err != nil {
		return err
	}
	if o.keep {
		log.Info("keeping the state directory", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	c, err := startCluster(ctx, o.cairnBin, dir, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := c.stop(); err != nil {
			log.Error("stopping the cluster", "err", err)
		}
	}()
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	b := &bench{clients: c.clients, pods: o.pods, creators: o.creators, rate: o.rate, probe: o.probe, log: log}
	if o.warmup {
		if err := b.warmup(ctx, c.nodes); err != nil {
			return err
		}
	}
	res, err := b.measure(ctx)
	if err != nil {
		return err
	}
	printReport(out, "embedded", res)
	fmt.Fprintln(out, "\nruntime cri: the agents of `cairn dev` run the embedded runtime only; both runtimes")
	fmt.Fprintln(out, "  are measured side by side, node side only, by BenchmarkPodStartup in node/agent (make bench).")
	return nil
}
