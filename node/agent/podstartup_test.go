package agent_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/internal/benchstat"
	"cairn/internal/testcluster"
	"cairn/internal/testimage"
	"cairn/node/agent"
	"cairn/node/runtime/embedded"
	"cairn/scheduler"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Pod startup benchmark parameters: the 100 pods on 2 nodes,
// created by 10 concurrent clients, at once or paced.
const (
	startupPods     = 100
	startupCreators = 10
	// sloRate is the pace, in pods per second, at which Kubernetes' own
	// load test (ClusterLoader2) creates the "latency pods" on which it
	// measures the pod startup SLO, once its cluster is saturated.
	sloRate = 5
	// saturationRate is four times that: the pod creation throughput
	// that test assumes while it saturates the cluster.
	saturationRate = 20
)

// BenchmarkPodStartup measures pod startup latency, from the create call
// to the pod seen Running through a watch, for both runtimes side by
// side: 100 pods on two agents on a one-replica control plane (the node
// side is what is measured; test/podbench measures a whole `cairn dev`
// cluster), created by 10 clients. In embedded and cri they are created
// at once and bound to the agents in advance, so the scheduler is out of
// the measurement; in the others a scheduler on the control plane places
// them, and they are created at once (embedded-scheduled) or paced:
// embedded-paced at saturationRate, cri-paced at sloRate, as Kubernetes
// measures its pod startup SLO. Each pod runs busybox's sleep, exec'd
// directly: like the pause pods of Kubernetes' own startup measurements,
// its workload costs next to nothing, so what is measured is the
// platform. Each run reports the p50 and p99 in milliseconds, and the
// CPU time the whole machine spent per pod from the first create to the
// last pod Running (cpu-ms/pod): pods created at once keep every core
// busy until the last runs, so the p99 follows that figure, which varies
// much less from run to run.
//
//	make build && go test ./node/agent -run '^$' -bench PodStartup -benchtime 1x
//
// To see where a run's time goes, profile only its measured window:
// CAIRN_BENCH_CPUPROFILE=FILE and CAIRN_BENCH_TRACE=FILE write a Go CPU
// profile and an execution trace of this process per run (FILE.r0,
// FILE.r1...), and CAIRN_BENCH_PERF_CTL=FIFO enables a
// `perf record -a --control fifo:FIFO -D -1` meanwhile, to see the
// shims, the containers and the kernel too.
//
// The embedded runtime runs bin/cairn-shim and bin/cairn-helper, as an
// installed agent does. It needs root, and Debian's containerd, runc and
// CNI plugins for cri.
func BenchmarkPodStartup(b *testing.B) {
	installHelpers(b)
	// The agent finds the installed shim itself.
	installed := func(t testing.TB) agent.Config {
		cfg := embeddedConfig(t)
		cfg.ShimBinary = ""
		return cfg
	}
	for _, rt := range []struct {
		name      string
		config    func(testing.TB) agent.Config
		scheduled bool
		rate      float64 // pods created per second; 0: all at once
	}{
		{"embedded", installed, false, 0},
		{"embedded-scheduled", installed, true, 0},
		{"embedded-paced", installed, true, saturationRate},
		{"cri", containerdConfig, false, 0},
		{"cri-paced", containerdConfig, true, sloRate},
	} {
		b.Run(rt.name, func(b *testing.B) {
			c := testcluster.New(b, 1)
			c.EnableKubeletClient()
			nodes := []*testNode{
				startTestNodeOn(b, c, rt.config(b), "10.98.1.0/24", defaultTimings),
				startTestNodeOn(b, c, rt.config(b), "10.98.2.0/24", defaultTimings),
			}
			if rt.scheduled {
				runScheduler(b, c)
			}
			// Like every run after it, the first starts on an idle
			// machine, not while the agents and the control plane still
			// settle after their start.
			start := time.Now()
			if !waitIdle(b, start.Add(time.Minute)) {
				b.Logf("the machine is still busy a minute after the nodes started; measuring anyway")
			}
			b.Logf("the machine was idle %v after the nodes started", time.Since(start).Round(time.Millisecond))
			var p50, p99, cpuPerPod time.Duration
			for i := 0; b.Loop(); i++ {
				run := measureStartup(b, nodes, fmt.Sprintf("r%d", i), rt.scheduled, rt.rate)
				lat := run.running
				p50, p99 = nearestRank(lat, 50), nearestRank(lat, 99)
				b.Logf("%s: %d pods on 2 nodes (%v), create→Running p50 %v, p99 %v, max %v", rt.name, len(lat), run.split,
					p50.Round(time.Millisecond), p99.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
				cpuPerPod = run.cpu / time.Duration(len(lat))
				b.Logf("%s: the machine's CPU from the first create to the last Running: %v over %v, %v per pod; %.1f store writes per pod", rt.name,
					run.cpu.Round(10*time.Millisecond), run.span.Round(time.Millisecond), cpuPerPod.Round(100*time.Microsecond),
					float64(run.writes)/float64(len(lat)))
				if rt.scheduled {
					b.Logf("%s: create→bound p50 %v, p99 %v", rt.name,
						nearestRank(run.bound, 50).Round(time.Millisecond), nearestRank(run.bound, 99).Round(time.Millisecond))
				}
			}
			b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
			b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
			b.ReportMetric(float64(cpuPerPod.Microseconds())/1000, "cpu-ms/pod")
		})
	}
}

// defaultTimings gives a node the kubelet's default intervals (resyncs,
// status updates, housekeeping) instead of the tests' short ones: the
// benchmark measures the agent as it runs by default.
func defaultTimings(cfg *agent.Config) {
	k := &cfg.Kubelet
	k.NodeStatusUpdateFrequency, k.NodeLeaseRenewInterval = 0, 0
	k.PodResyncInterval, k.SyncFrequency, k.HousekeepingInterval = 0, 0, 0
}

// runScheduler runs the scheduler against c until the benchmark ends.
func runScheduler(b *testing.B, c *testcluster.Cluster) {
	s, err := scheduler.New(scheduler.Config{Client: c.Client(0), Identity: "podstartup"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
}

// startupRun is what one measureStartup saw.
type startupRun struct {
	// running and bound are each pod's create→Running and create→bound
	// (seen with a node) times, sorted.
	running, bound []time.Duration
	// split is how many pods ran on each node.
	split map[string]int
	// cpu is the CPU time the whole machine spent from the first create
	// to the last pod Running, and span how long that was.
	cpu, span time.Duration
	// writes is how many writes the store took meanwhile (pods, their
	// statuses and bindings, events), each one a Raft commit.
	writes int64
}

// measureStartup creates startupPods pods spread over nodes (or left to
// the scheduler), at rate pods per second or else all at once, waits for
// all to run, and deletes them.
func measureStartup(b *testing.B, nodes []*testNode, prefix string, scheduled bool, rate float64) startupRun {
	ctx := context.Background()
	client := nodes[0].client
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "bench=" + prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	created := map[string]time.Time{}
	jobs := make(chan int)
	var wg sync.WaitGroup
	rev0 := storeRevision(b, client)
	stopProfiles := profileWindow(b, prefix)
	cpu0, start := busyCPU(b), time.Now()
	for range startupCreators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				n := nodes[i%len(nodes)]
				pod := n.pod(fmt.Sprintf("%s-%03d", prefix, i), corev1.Container{Name: "main", Image: testimage.BusyboxRef,
					Command: []string{"sleep", "3600"}})
				pod.Labels["bench"] = prefix
				if scheduled {
					pod.Spec.NodeName = ""
				}
				pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
				start := time.Now()
				if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					b.Error(err)
					continue
				}
				mu.Lock()
				if _, seen := created[pod.Name]; !seen {
					created[pod.Name] = start
				}
				mu.Unlock()
			}
		}()
	}
	go func() {
		for i := range startupPods {
			if rate > 0 {
				time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
			}
			jobs <- i
		}
		close(jobs)
	}()
	running, bound := map[string]time.Time{}, map[string]time.Time{}
	split := map[string]int{}
	timeout := time.After(3 * time.Minute)
	for len(running) < startupPods {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("the pod watch ended")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted {
				continue
			}
			if _, seen := bound[p.Name]; !seen && p.Spec.NodeName != "" {
				bound[p.Name] = time.Now()
			}
			if p.Status.Phase == corev1.PodRunning {
				if _, seen := running[p.Name]; !seen {
					running[p.Name] = time.Now()
					split[p.Spec.NodeName]++
				}
			}
		case <-timeout:
			b.Fatalf("%d of %d pods Running after 3m", len(running), startupPods)
		}
	}
	wg.Wait()
	cpu, span := busyCPU(b)-cpu0, time.Since(start)
	stopProfiles()
	b.StopTimer()
	defer b.StartTimer()
	since := func(seen map[string]time.Time) []time.Duration {
		var lat []time.Duration
		for name, at := range seen {
			if start, ok := created[name]; ok {
				lat = append(lat, at.Sub(start))
			}
		}
		slices.Sort(lat)
		return lat
	}
	mu.Lock()
	run := startupRun{running: since(running), bound: since(bound), split: split, cpu: cpu, span: span,
		writes: storeRevision(b, client) - rev0}
	mu.Unlock()
	err = client.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "bench=" + prefix})
	if err != nil {
		b.Fatal(err)
	}
	settle(b, nodes, prefix)
	return run
}

// settle waits until the pods of run prefix are gone, their
// containers have ended and the machine is idle again. A pod deleted
// with no grace period still gets the kubelet's minimum of two seconds
// to stop, and the agents then remove 100 sandboxes: a next run started
// meanwhile would be measured on cores busy with that teardown.
func settle(b *testing.B, nodes []*testNode, prefix string) {
	ctx := context.Background()
	client := nodes[0].client
	deadline := time.Now().Add(time.Minute)
	wait := func(what string, done func() bool) {
		for !done() {
			if time.Now().After(deadline) {
				b.Fatalf("run %s: %s a minute after its pods were deleted", prefix, what)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	wait("pods still exist", func() bool {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "bench=" + prefix})
		if err != nil {
			b.Fatal(err)
		}
		return len(pods.Items) == 0
	})
	// Both runtimes put the containers in cgroups under the node's
	// cgroup root; the pids controller counts what runs below it.
	wait("containers still run", func() bool {
		for _, n := range nodes {
			raw, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/pids", n.cfg.CgroupRoot, "pids.current"))
			if err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
			if err == nil && strings.TrimSpace(string(raw)) != "0" {
				return false
			}
		}
		return true
	})
	// The kubelets have removed each pod's sandbox, volumes and
	// directory, which they do last: a teardown still going on, waiting
	// mostly on the kernel, passes for idle below but would share the
	// next run's cores.
	deleted := time.Now()
	wait("pods still have directories on their nodes", func() bool {
		for _, n := range nodes {
			entries, err := os.ReadDir(filepath.Join(n.cfg.DataDir, "kubelet", "pods"))
			if err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
			if len(entries) > 0 {
				return false
			}
		}
		return true
	})
	b.Logf("run %s: the nodes removed the pods' sandboxes and volumes %v after their containers ended", prefix, time.Since(deleted).Round(time.Millisecond))
	if !waitIdle(b, deadline) {
		b.Logf("run %s: the machine is still busy a minute after its pods were deleted; measuring anyway", prefix)
	}
}

// waitIdle waits until the machine is idle, under a tenth of it busy
// over two windows in a row, or deadline passes (false).
func waitIdle(b *testing.B, deadline time.Time) bool {
	const window = 250 * time.Millisecond
	idle := time.Duration(float64(window) * float64(runtime.NumCPU()) / 10)
	for quiet := 0; quiet < 2; {
		before := busyCPU(b)
		time.Sleep(window)
		if busyCPU(b)-before < idle {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// storeRevision is the store's revision: it grows by one with every write.
func storeRevision(b *testing.B, client kubernetes.Interface) int64 {
	rv, err := benchstat.StoreRevision(context.Background(), client)
	if err != nil {
		b.Fatal(err)
	}
	return rv
}

// installHelpers puts the cairn-shim and cairn-helper of make build
// beside the test binary, where the embedded runtime looks for them:
// without the helper the runtime runs the test binary itself as pod
// init, whose start-up would be measured instead of the runtime's.
func installHelpers(b *testing.B) {
	bin := os.Getenv("CAIRN_BIN")
	if bin == "" {
		bin = "../../bin/cairn"
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{embedded.ShimName, embedded.HelperName} {
		raw, err := os.ReadFile(filepath.Join(filepath.Dir(bin), name))
		if err != nil {
			b.Fatalf("%v: build it with make build", err)
		}
		dst := filepath.Join(filepath.Dir(self), name)
		if err := os.WriteFile(dst, raw, 0o755); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.Remove(dst) })
	}
}

// busyCPU is the CPU time the machine has spent working. A burst of
// starts keeps every core busy, so its p99 is about the burst's CPU time
// over the cores: CPU per pod is the steadier figure to improve.
func busyCPU(b *testing.B) time.Duration {
	d, err := benchstat.Busy()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// nearestRank is the nearest-rank p-th percentile of sorted.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
