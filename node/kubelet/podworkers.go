package kubelet

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podWorkers runs one worker goroutine per pod the node has.
type podWorkers struct {
	k       *Kubelet
	mu      sync.Mutex
	workers map[types.UID]*podWorker
	wg      sync.WaitGroup
	ctx     context.Context
}

func newPodWorkers(k *Kubelet) *podWorkers {
	return &podWorkers{k: k, workers: map[types.UID]*podWorker{}}
}

// podWorker converges one pod. Its fields below mu are set by the
// informer; the others belong to the worker goroutine.
type podWorker struct {
	uid  types.UID
	kick chan struct{}

	mu   sync.Mutex
	pod  *corev1.Pod
	gone bool // deleted from the API
	gen  int  // bumped on each update, so a finishing worker sees news

	volumes    volumeSet
	waiting    map[string]waiting
	pulls      map[string]time.Time // image → last failed pull
	messages   map[string]string    // instance → termination message
	mountError string
	// mountFailures counts failed volume setups in a row, for the retry
	// delay.
	mountFailures int
	mountAt       time.Time
	adopted       bool
	// admitted is set once the node took the pod (see admit).
	admitted bool
}

func (w *podWorker) snapshot() (*corev1.Pod, bool, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.gone, w.gen
}

func (pw *podWorkers) start(ctx context.Context) {
	pw.mu.Lock()
	pw.ctx = ctx
	pw.mu.Unlock()
}

// update hands the latest pod object to its worker, starting one.
func (pw *podWorkers) update(pod *corev1.Pod) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	w, ok := pw.workers[pod.UID]
	if !ok {
		if pw.ctx == nil || pw.ctx.Err() != nil {
			return
		}
		w = &podWorker{uid: pod.UID, kick: make(chan struct{}, 1), waiting: map[string]waiting{},
			pulls: map[string]time.Time{}, messages: map[string]string{}}
		pw.workers[pod.UID] = w
		pw.wg.Add(1)
		go pw.run(pw.ctx, w)
	}
	w.mu.Lock()
	w.pod = pod
	w.gen++
	w.mu.Unlock()
	signal(w.kick)
}

// remove tells a pod's worker the pod is gone from the API.
func (pw *podWorkers) remove(pod *corev1.Pod) {
	pw.mu.Lock()
	w, ok := pw.workers[pod.UID]
	pw.mu.Unlock()
	if !ok {
		// No worker: start one to stop and clean up whatever runs.
		pw.update(pod)
		pw.mu.Lock()
		w, ok = pw.workers[pod.UID]
		pw.mu.Unlock()
		if !ok {
			return
		}
	}
	w.mu.Lock()
	w.gone = true
	w.gen++
	w.mu.Unlock()
	signal(w.kick)
}

// kick makes a pod's worker sync now.
func (pw *podWorkers) kick(uid types.UID) {
	pw.mu.Lock()
	w, ok := pw.workers[uid]
	pw.mu.Unlock()
	if ok {
		signal(w.kick)
	}
}

// has reports whether a pod has a worker.
func (pw *podWorkers) has(uid types.UID) bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	_, ok := pw.workers[uid]
	return ok
}

func (pw *podWorkers) wait() { pw.wg.Wait() }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run syncs the pod until the sync says it is done with it (the pod
// ended or is gone) and no news came meanwhile.
func (pw *podWorkers) run(ctx context.Context, w *podWorker) {
	defer pw.wg.Done()
	for {
		_, _, gen := w.snapshot()
		done, requeue := pw.k.syncPod(ctx, w)
		if ctx.Err() != nil {
			pw.forget(w)
			return
		}
		if done && pw.finish(w, gen) {
			return
		}
		wait := pw.k.cfg.PodResyncInterval
		if requeue > 0 && requeue < wait {
			wait = requeue
		}
		if done {
			wait = time.Hour // only news wakes a finished pod
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			pw.forget(w)
			return
		case <-w.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// finish removes a done worker unless its pod changed since gen.
func (pw *podWorkers) finish(w *podWorker, gen int) bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != gen {
		return false
	}
	delete(pw.workers, w.uid)
	return true
}

func (pw *podWorkers) forget(w *podWorker) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	delete(pw.workers, w.uid)
}
