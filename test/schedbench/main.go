// Command schedbench measures the scheduler against a real in-process
// control plane: it starts a 3-replica cluster, creates fake nodes and
// then pods with resource requests through the API with many concurrent
// clients while the scheduler runs, and reports pods bound per second and
// the latency from a pod's creation to its binding as seen by a watch.
//
//	go run ./test/schedbench -nodes 5000 -pods 10000 -workload basic
//
// With -preload the pods are created before the scheduler starts, which
// measures the scheduler alone (its cycles and its bindings) rather than
// the whole create-schedule-bind path.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"k8s.io/klog/v2"
)

type options struct {
	nodes, pods, clients int
	workload             string
	preload              bool
	dir, logStore        string
	timeout              time.Duration
	verbose              bool
	cpuProfile           string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 5000, "fake nodes to create")
	flag.IntVar(&o.pods, "pods", 10000, "pods to schedule")
	flag.IntVar(&o.clients, "clients", 32, "concurrent API clients creating nodes and pods")
	flag.StringVar(&o.workload, "workload", "basic", "basic (requests only) or spread-affinity (zone spreading and preferred anti-affinity)")
	flag.BoolVar(&o.preload, "preload", false, "create every pod before starting the scheduler")
	flag.StringVar(&o.logStore, "raft-log-store", "boltdb", "the replicas' Raft log store, as cairn server --raft-log-store: boltdb or wal")
	flag.StringVar(&o.dir, "dir", "", "data directory of the cluster (default: a temporary one; /dev/shm keeps fsyncs out)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.BoolVar(&o.verbose, "v", false, "log the scheduler's and the cluster's messages")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the scheduling phase to this file")
	flag.Parse()
	if !o.verbose {
		// client-go reports through klog (event write failures under
		// load, say); keep the report readable.
		klog.SetSlogLogger(logger(false))
	}
	if _, ok := workload(o.workload); !ok {
		fmt.Fprintf(os.Stderr, "schedbench: unknown -workload %q: want basic or spread-affinity\n", o.workload)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, o.timeout)
	defer cancelTimeout()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func logger(verbose bool) *slog.Logger {
	if verbose {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
