package storage

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// benchPod is a pod of a realistic size (about 1 KiB stored).
func benchPod(i int) *corev1.Pod {
	name := fmt.Sprintf("pod-%05d", i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fmt.Sprintf("ns-%d", i%10),
			Labels:          map[string]string{"app": "bench", "pod-template-hash": "5d8f7c9b6d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "bench-5d8f7c9b6d", UID: "0b4a1c2e-1111-2222-3333-444455556666"}}},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%d", i%50),
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1.2.3",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.7", HostIP: "192.168.1.10"},
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(float64(len(d)-1)*p)]
}

// BenchmarkTenThousandPods creates 10,000 pods with 32 clients through a
// store on a one-replica raftstore in process, then measures what the
// issue's benchmark asks of the storage layer: create latency, list-all
// latency (consistent and from the cache), 1,000 watchers seeing one
// change, and the heap holding the cache.
func BenchmarkTenThousandPods(b *testing.B) {
	c := newTestCluster(b, 1)
	s := NewStore(c.local(0), "/registry/pods", func() kruntime.Object { return &corev1.Pod{} },
		func() kruntime.Object { return &corev1.PodList{} }, StoreOptions{Logger: testLogger()})
	s.Run(context.Background())
	defer s.Stop()
	for !s.Ready() {
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	// b.ResetTimer drops reported metrics: collect them, report at the end.
	metrics := map[string]float64{}
	report := func(v float64, unit string) { metrics[unit] = v }
	const pods, clients = 10000, 32
	lat := make([]time.Duration, pods)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < pods; i += clients {
				p := benchPod(i)
				t0 := time.Now()
				if _, err := s.Create(ctx, s.Key(p.Namespace, p.Name), p, 0); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	report(float64(pods)/elapsed.Seconds(), "creates/s")
	report(float64(percentile(lat, 0.99).Milliseconds()), "create-p99-ms")

	for _, rv := range []string{"", "0"} {
		var ls []time.Duration
		for i := 0; i < 10; i++ {
			t0 := time.Now()
			list, err := s.List(ctx, s.Prefix(""), ListOptions{ResourceVersion: rv})
			if err != nil || len(list.(*corev1.PodList).Items) != pods {
				b.Fatalf("list: %v", err)
			}
			ls = append(ls, time.Since(t0))
		}
		name := "list-consistent-p99-ms"
		if rv == "0" {
			name = "list-cache-p99-ms"
		}
		report(float64(percentile(ls, 0.99).Microseconds())/1000, name)
	}

	rv := ""
	if l, err := s.List(ctx, s.Prefix(""), ListOptions{Limit: 1}); err == nil {
		rv = l.(*corev1.PodList).ResourceVersion
	}
	const watchers = 1000
	chans := make([]<-chan struct{}, watchers)
	for i := range chans {
		w, err := s.Watch(ctx, s.Prefix(""), WatchOptions{ResourceVersion: rv})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		done := make(chan struct{})
		chans[i] = done
		go func() { <-w.ResultChan(); close(done) }()
	}
	t0 := time.Now()
	if _, err := s.GuaranteedUpdate(ctx, s.Key("ns-0", "pod-00000"), nil, func(cur kruntime.Object) (kruntime.Object, error) {
		cur.(*corev1.Pod).Status.Phase = corev1.PodSucceeded
		return cur, nil
	}, false); err != nil {
		b.Fatal(err)
	}
	for _, ch := range chans {
		<-ch
	}
	report(float64(time.Since(t0).Microseconds())/1000, "fanout-1000-ms")

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	report(float64(ms.HeapInuse)/(1<<20), "heap-MiB")

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.List(ctx, s.Prefix(""), ListOptions{ResourceVersion: "0"}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for unit, v := range metrics {
		b.ReportMetric(v, unit)
	}
}
