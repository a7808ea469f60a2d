package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cairn/internal/benchstat"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// createAttempts bounds the tries of one create: a server may be briefly
// unable to answer (a leader change), which is not what is measured.
const createAttempts = 5

// bench creates the measured pods and times them.
type bench struct {
	// clients has one client per API server; creator i uses client i
	// modulo their number, spreading the writes as the agents do.
	clients  []kubernetes.Interface
	pods     int
	creators int
	rate     float64 // pods per second; 0 means no pacing
	probe    bool
	log      *slog.Logger
}

// podTimes are the moments one pod was created and seen by the watch.
// A zero time is a state not seen yet.
type podTimes struct {
	node                                  string
	create, scheduled, running, readySeen time.Time
}

// tracker records when the watch first sees each pod scheduled, Running
// and Ready, and closes done once every pod is Ready.
type tracker struct {
	mu   sync.Mutex
	want int
	pods map[string]*podTimes
	// running and ready count the pods seen so; busyAllRunning is the
	// machine's busy CPU time when the last one was seen Running.
	running, ready int
	busyAllRunning time.Duration
	failed         error
	done           chan struct{}
}

func newTracker(want int) *tracker {
	return &tracker{want: want, pods: map[string]*podTimes{}, done: make(chan struct{})}
}

// unsafeGet returns the pod's record, making it on first use: the watch may
// see a pod before its creator's call returns.
func (t *tracker) unsafeGet(name string) *podTimes {
	p, ok := t.pods[name]
	if !ok {
		p = &podTimes{}
		t.pods[name] = p
	}
	return p
}

func (t *tracker) created(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unsafeGet(name).create = at
}

// seen takes the time first, so waiting for the lock does not count.
func (t *tracker) seen(obj any) {
	now := time.Now()
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.unsafeGet(pod.Name)
	if pod.Spec.NodeName != "" && p.scheduled.IsZero() {
		p.scheduled, p.node = now, pod.Spec.NodeName
	}
	if pod.Status.Phase == corev1.PodRunning && p.running.IsZero() {
		p.running = now
		if t.running++; t.running == t.want {
			t.busyAllRunning, _ = benchstat.Busy() // checked readable before the start
		}
	}
	if pod.Status.Phase == corev1.PodFailed && t.failed == nil {
		t.failed = fmt.Errorf("podbench: pod %s failed on %s: %s %s", pod.Name, pod.Spec.NodeName, pod.Status.Reason, pod.Status.Message)
		close(t.done)
		return
	}
	if podReady(pod) && p.readySeen.IsZero() {
		p.readySeen = now
		t.ready++
		if t.ready == t.want && t.failed == nil {
			close(t.done)
		}
	}
}

// status describes the progress, for a timeout.
func (t *tracker) status() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var scheduled int
	for _, p := range t.pods {
		if !p.scheduled.IsZero() {
			scheduled++
		}
	}
	return fmt.Sprintf("%d of %d pods seen, %d scheduled, %d Running, %d Ready", len(t.pods), t.want, scheduled, t.running, t.ready)
}

// measure creates the pods with b.creators concurrent clients while an
// informer watches them, and returns their times once all are Ready.
func (b *bench) measure(ctx context.Context) (*result, error) {
	tr := newTracker(b.pods)
	// The watch goes to the first server; the creates to all three.
	factory := informers.NewSharedInformerFactoryWithOptions(b.clients[0], 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = benchLabel + "=" + measureValue }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    tr.seen,
		UpdateFunc: func(_, obj any) { tr.seen(obj) },
	}); err != nil {
		return nil, fmt.Errorf("podbench: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("podbench: the pod watch did not sync: %w", ctx.Err())
	}

	busy0, err := benchstat.Busy()
	if err != nil {
		return nil, fmt.Errorf("podbench: %w", err)
	}
	rev0, err := benchstat.StoreRevision(ctx, b.clients[0])
	if err != nil {
		return nil, err
	}
	b.log.Info("creating pods", "pods", b.pods, "creators", b.creators, "rate", b.rate)
	names := make(chan string)
	errs := make(chan error, b.creators)
	var wg sync.WaitGroup
	for i := range b.creators {
		cs := b.clients[i%len(b.clients)]
		wg.Go(func() {
			for name := range names {
				if err := b.create(ctx, cs, name, tr); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	start := time.Now()
	go func() {
		defer close(names)
		for i := range b.pods {
			if b.rate > 0 {
				due := start.Add(time.Duration(float64(i) / b.rate * float64(time.Second)))
				select {
				case <-time.After(time.Until(due)):
				case <-ctx.Done():
					return
				}
			}
			select {
			case names <- fmt.Sprintf("bench-%03d", i):
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	created := time.Since(start)
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return nil, err
	}
	b.log.Info("pods created", "took", created.Round(time.Millisecond))

	select {
	case <-tr.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("podbench: waiting for the pods to be Ready: %w (%s)", ctx.Err(), tr.status())
	}
	rev1, err := benchstat.StoreRevision(ctx, b.clients[0])
	if err != nil {
		return nil, err
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.failed != nil {
		return nil, tr.failed
	}
	r := newResult(tr.pods, start, created, b.creators, b.rate, b.probe)
	r.cpu, r.writes = tr.busyAllRunning-busy0, rev1-rev0
	return r, nil
}

// create creates one pod, its time taken just before the first try.
func (b *bench) create(ctx context.Context, cs kubernetes.Interface, name string, tr *tracker) error {
	pod := benchPod(name, measureValue, "", b.probe)
	tr.created(name, time.Now())
	var err error
	for attempt := range createAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("podbench: creating pod %s: %w", name, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
		_, err = cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		b.log.Warn("creating a pod", "pod", name, "attempt", attempt+1, "err", err)
	}
	return fmt.Errorf("podbench: creating pod %s: %w", name, err)
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// warmup starts one pod on each node and deletes it, so that what is
// done once per node (the image's first use) stays out of the figures.
func (b *bench) warmup(ctx context.Context, nodes []string) error {
	started := time.Now()
	cs := b.clients[0]
	pods := cs.CoreV1().Pods(namespace)
	for _, n := range nodes {
		if _, err := pods.Create(ctx, benchPod("warmup-"+n, warmupValue, n, b.probe), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("podbench: warm-up pod on %s: %w", n, err)
		}
	}
	for _, n := range nodes {
		name := "warmup-" + n
		if err := waitFor(ctx, time.Minute, "warm-up pod "+name+" to be Ready", func() (bool, error) {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase == corev1.PodFailed {
				return false, fmt.Errorf("%w: %s %s", errPodFailed, p.Status.Reason, p.Status.Message)
			}
			return podReady(p), nil
		}); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := pods.Delete(ctx, "warmup-"+n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("podbench: deleting warm-up pod on %s: %w", n, err)
		}
	}
	// Their teardown would otherwise overlap the measurement.
	for _, n := range nodes {
		name := "warmup-" + n
		if err := waitFor(ctx, time.Minute, "warm-up pod "+name+" to be gone", func() (bool, error) {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}); err != nil {
			return err
		}
	}
	b.log.Info("warm-up done", "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// errPodFailed ends a wait at once: a failed pod will not start.
var errPodFailed = errors.New("podbench: pod failed")

// waitFor polls cond every 100ms until it holds. An error it returns is
// shown on a timeout, and ends the wait at once if it is errPodFailed.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if errors.Is(err, errPodFailed) {
			return fmt.Errorf("podbench: waiting for %s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("podbench: timed out after %s waiting for %s: %v", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("podbench: waiting for %s: %w", what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
