package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"cairn/internal/testcluster"
	"cairn/scheduler"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// namespace holds the benchmark's pods.
const namespace = "schedbench"

func run(ctx context.Context, o options, out io.Writer) error {
	if o.verbose {
		// The cluster logs through testcluster.Logger.
		os.Setenv("CAIRN_TEST_LOG", "1")
	}
	fmt.Fprintf(out, "starting a 3-replica cluster (raft log store %s)...\n", o.logStore)
	c, stop, err := testcluster.Start(o.dir, 3, testcluster.Options{LogStore: o.logStore})
	if err != nil {
		return err
	}
	defer stop()
	servers := make([]kubernetes.Interface, c.Size())
	for i := range servers {
		if servers[i], err = kubernetes.NewForConfig(benchConfig(c.AdminConfig(i))); err != nil {
			return fmt.Errorf("schedbench: %w", err)
		}
	}
	if err := createNamespace(ctx, servers[0]); err != nil {
		return err
	}
	start := time.Now()
	if err := createNodes(ctx, servers, o.nodes, o.clients); err != nil {
		return err
	}
	fmt.Fprintf(out, "created %d nodes in %s\n", o.nodes, time.Since(start).Round(time.Millisecond))

	w, err := watchBindings(ctx, servers[len(servers)-1], o.pods)
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Config{Client: servers[0], Logger: logger(o.verbose), Identity: "schedbench"})
	if err != nil {
		return err
	}
	schedCtx, stopSched := context.WithCancel(ctx)
	var schedDone sync.WaitGroup
	startScheduler := func() {
		schedDone.Add(1)
		go func() {
			defer schedDone.Done()
			if err := sched.Run(schedCtx); err != nil {
				fmt.Fprintf(out, "scheduler: %v\n", err)
			}
		}()
	}
	defer func() { stopSched(); schedDone.Wait() }()

	if o.cpuProfile != "" {
		stopProfile, err := startProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	if !o.preload {
		startScheduler()
	}
	cpu0 := cpuTime()
	build, _ := workload(o.workload)
	created, err := createPods(ctx, servers, o.pods, o.clients, build)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "created %d pods in %s (%.0f/s)\n", o.pods, created.elapsed().Round(time.Millisecond), created.rate())
	var schedStart time.Time
	if o.preload {
		schedStart = time.Now()
		cpu0 = cpuTime()
		startScheduler()
	}
	bound, err := w.wait(ctx)
	if err != nil {
		return err
	}
	cpu := cpuTime() - cpu0
	r := summarize(created, bound, schedStart)
	r.print(out, o, cpu)
	return nil
}

// benchConfig lifts client-go's rate limits and speaks protobuf, as the
// control plane's own components do.
func benchConfig(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 1e6, 1e6
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return rc
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("schedbench: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("schedbench: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
