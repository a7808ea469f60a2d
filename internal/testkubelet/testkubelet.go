// Package testkubelet stands in for the scheduler and the kubelets in
// tests of the workload controllers: it binds pending pods to fake nodes,
// reports bound pods Running and Ready, and completes graceful deletions
// the way a kubelet does once a pod's containers have stopped. No
// container runs anywhere.
package testkubelet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Options shape the fake kubelets.
type Options struct {
	// Nodes are the names pods are bound to, round-robin, unless they
	// require a node by name (as DaemonSet pods do). Default: node-1,
	// node-2, node-3. No Node objects are needed.
	Nodes []string
	// Namespace limits the kubelets to one namespace; "" is every one.
	Namespace string
	// ReadyAfter is how long a bound pod stays Pending before it is
	// Running and Ready, so tests can watch rollouts advance.
	ReadyAfter time.Duration
	// Logger defaults to a silent one.
	Logger *slog.Logger
}

// Kubelet is the running stand-in.
type Kubelet struct {
	client kubernetes.Interface
	opts   Options
	log    *slog.Logger
	pods   cache.Indexer
	queue  workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	next    int
	boundAt map[types.UID]time.Time
}

// Start runs the fake kubelets until ctx ends. It returns once their pod
// cache has synced.
func Start(ctx context.Context, client kubernetes.Interface, opts Options) (*Kubelet, error) {
	if len(opts.Nodes) == 0 {
		opts.Nodes = []string{"node-1", "node-2", "node-3"}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(opts.Namespace))
	inf := factory.Core().V1().Pods().Informer()
	k := &Kubelet{
		client: client, opts: opts, log: log, pods: inf.GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "testkubelet"}),
		boundAt: map[types.UID]time.Time{},
	}
	add := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			k.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: add, UpdateFunc: func(_, cur any) { add(cur) },
	}); err != nil {
		return nil, fmt.Errorf("testkubelet: %w", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("testkubelet: the pod cache did not sync")
	}
	for range 2 {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for k.processNext(ctx) {
			}
		}, 100*time.Millisecond)
	}
	go func() {
		<-ctx.Done()
		k.queue.ShutDown()
		factory.Shutdown()
	}()
	return k, nil
}

func (k *Kubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.handle(ctx, key); err != nil {
		if ctx.Err() == nil {
			k.log.Debug("testkubelet: retrying", "pod", key, "err", err)
		}
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

func (k *Kubelet) handle(ctx context.Context, key string) error {
	obj, exists, err := k.pods.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pod := obj.(*corev1.Pod)
	switch {
	case pod.DeletionTimestamp != nil:
		return k.finishDeletion(ctx, pod)
	case pod.Spec.NodeName == "":
		return k.bind(ctx, key, pod)
	case !isRunningAndReady(pod):
		return k.start(ctx, key, pod)
	}
	return nil
}

// finishDeletion removes a terminating pod for good, as its kubelet does
// once the containers have stopped.
func (k *Kubelet) finishDeletion(ctx context.Context, pod *corev1.Pod) error {
	if len(pod.Finalizers) > 0 {
		return nil
	}
	err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// bind does the scheduler's job: the node the pod requires by name, else
// the next fake node.
func (k *Kubelet) bind(ctx context.Context, key string, pod *corev1.Pod) error {
	node := requiredNode(pod)
	if node == "" {
		k.mu.Lock()
		node = k.opts.Nodes[k.next%len(k.opts.Nodes)]
		k.next++
		k.mu.Unlock()
	}
	err := k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.boundAt[pod.UID] = time.Now()
	k.mu.Unlock()
	k.queue.AddAfter(key, k.opts.ReadyAfter)
	return nil
}

// requiredNode is the node a pod's required node affinity names through
// metadata.name, as the DaemonSet controller pins its pods.
func requiredNode(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// start reports a bound pod Running with every container ready, once it
// has been bound for ReadyAfter.
func (k *Kubelet) start(ctx context.Context, key string, pod *corev1.Pod) error {
	k.mu.Lock()
	at, ok := k.boundAt[pod.UID]
	if !ok {
		at = time.Now()
		k.boundAt[pod.UID] = at
	}
	k.mu.Unlock()
	if wait := k.opts.ReadyAfter - time.Since(at); wait > 0 {
		k.queue.AddAfter(key, wait)
		return nil
	}
	now := metav1.Now()
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	if p.Status.StartTime == nil {
		p.Status.StartTime = &now
	}
	p.Status.PodIP = "10.0.0.1"
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setCondition(&p.Status, t, now)
	}
	_, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, now metav1.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != corev1.ConditionTrue {
				st.Conditions[i].Status = corev1.ConditionTrue
				st.Conditions[i].LastTransitionTime = now
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

func isRunningAndReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
