package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// zones the nodes are spread over.
const zones = 10

// workload returns the builder of the i-th pod of a workload.
func workload(name string) (func(i int) *v1.Pod, bool) {
	switch name {
	case "basic":
		return basicPod, true
	case "spread-affinity":
		return spreadAffinityPod, true
	}
	return nil, false
}

func basicPod(i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Namespace: namespace},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi"),
			}},
		}}},
	}
}

// spreadAffinityPod belongs to one of 100 apps; it spreads over zones
// (DoNotSchedule, maxSkew 1) and prefers hosts without its app.
func spreadAffinityPod(i int) *v1.Pod {
	p := basicPod(i)
	app := map[string]string{"app": fmt.Sprintf("app-%d", i%100)}
	p.Labels = app
	sel := &metav1.LabelSelector{MatchLabels: app}
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: sel,
	}}
	p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{
			Weight: 100, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: sel},
		}},
	}}
	return p
}

func node(i int) *v1.Node {
	name := fmt.Sprintf("node-%05d", i)
	capacity := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("8"), v1.ResourceMemory: resource.MustParse("32Gi"), v1.ResourcePods: resource.MustParse("110"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelHostname: name, v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%zones),
		}},
		Status: v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
		},
	}
}

func createNamespace(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("schedbench: create namespace: %w", err)
	}
	return nil
}

// parallel runs fn(i) for i in [0, n) on workers goroutines, stopping at
// the first error.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, worker, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, w, i); err != nil {
					once.Do(func() { first = err })
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// retry calls fn until it succeeds, gives a non-transient error, or five
// attempts have failed: under load the store may change leaders, and a
// benchmark should measure through that rather than stop.
func retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := range 5 {
		if err = fn(); err == nil || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return err
}

func transient(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)
}

// createNodes creates the nodes, then sets their status (allocatable,
// Ready), as a kubelet registering would.
func createNodes(ctx context.Context, servers []kubernetes.Interface, n, workers int) error {
	return parallel(ctx, n, workers, func(ctx context.Context, w, i int) error {
		cs := servers[w%len(servers)]
		want := node(i)
		var created *v1.Node
		err := retry(ctx, func() error {
			var err error
			created, err = cs.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				created, err = cs.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("schedbench: create node %s: %w", want.Name, err)
		}
		created.Status = want.Status
		err = retry(ctx, func() error {
			_, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("schedbench: node %s status: %w", want.Name, err)
		}
		return nil
	})
}

// creation records when each pod's create request was sent.
type creation struct {
	sent        []time.Time
	first, last time.Time
}

func (c *creation) elapsed() time.Duration { return c.last.Sub(c.first) }

func (c *creation) rate() float64 { return float64(len(c.sent)) / c.elapsed().Seconds() }

func createPods(ctx context.Context, servers []kubernetes.Interface, n, workers int, build func(int) *v1.Pod) (*creation, error) {
	c := &creation{sent: make([]time.Time, n), first: time.Now()}
	err := parallel(ctx, n, workers, func(ctx context.Context, w, i int) error {
		p := build(i)
		c.sent[i] = time.Now()
		err := retry(ctx, func() error {
			_, err := servers[w%len(servers)].CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("schedbench: create pod %s: %w", p.Name, err)
		}
		return nil
	})
	c.last = time.Now()
	return c, err
}
