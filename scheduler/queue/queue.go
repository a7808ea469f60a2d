// Package queue is the scheduling queue: pods waiting to be scheduled, in
// three sub-queues.
//
//   - active: pods ready to be tried, ordered by the QueueSort plugin
//     (priority, then age).
//   - backoff: pods that failed recently and wait out an exponential
//     backoff (initial * 2^(attempts-1), capped) before becoming active.
//   - unschedulable: pods no node could take. They wait for a cluster
//     event that may change that (a node added or changed, a pod deleted)
//     and that one of the plugins that rejected them cares about, or for
//     a periodic flush (5 minutes by default), as in Kubernetes.
//
// A pod popped for scheduling is "in flight" until it is bound or put
// back. If a relevant event arrived while it was in flight, a failure
// sends it to backoff instead of unschedulable, so the event is not lost.
package queue

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"cairn/scheduler/framework"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// ErrClosed is returned by Pop once the queue is closed.
var ErrClosed = errors.New("queue: closed")

// How often the background loops look for pods to move, as in
// kube-scheduler.
const (
	backoffFlushInterval       = time.Second
	unschedulableFlushInterval = 30 * time.Second
)

// Config configures a Queue.
type Config struct {
	// Less orders the active queue (the QueueSort plugin).
	Less framework.LessFunc
	// Clock defaults to the real clock; tests pass a fake one.
	Clock clock.WithTicker
	// InitialBackoff and MaxBackoff bound the per-pod backoff.
	InitialBackoff, MaxBackoff time.Duration
	// MaxInUnschedulable is how long a pod stays unschedulable without
	// a relevant event before it is retried anyway.
	MaxInUnschedulable time.Duration
	// PluginEvents says, per plugin, which events may make a pod it
	// rejected schedulable; a nil list means any event.
	PluginEvents map[string][]framework.ClusterEvent
}

// Queue is the scheduling queue. It is safe for concurrent use and
// implements framework.PodNominator.
type Queue struct {
	cfg Config

	mu            sync.Mutex
	cond          *sync.Cond
	active        *podHeap
	backoff       *podHeap
	unschedulable map[types.UID]*framework.QueuedPodInfo
	inFlight      map[types.UID]*inFlightPod
	// schedulingCycle counts Pops; moveRequestCycle is the cycle at the
	// last relevant cluster event.
	schedulingCycle  int64
	moveRequestCycle int64
	closed           bool

	nominated      nominator
	nominatedCount atomic.Int64
}

// inFlightPod remembers what happened to a pod while it was being
// scheduled.
type inFlightPod struct {
	latest  *v1.Pod
	changed bool
	deleted bool
}

var _ framework.PodNominator = (*Queue)(nil)

// New returns an empty queue.
func New(cfg Config) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	q := &Queue{
		cfg:           cfg,
		unschedulable: map[types.UID]*framework.QueuedPodInfo{},
		inFlight:      map[types.UID]*inFlightPod{},
		nominated:     newNominator(),
	}
	q.cond = sync.NewCond(&q.mu)
	q.active = newPodHeap(cfg.Less)
	q.backoff = newPodHeap(func(a, b *framework.QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	return q
}

// Close wakes Pop callers, which then return ErrClosed.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Add queues a new pending pod.
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unsafeUpdateNomination(pod)
	if q.unsafeReplace(pod, false) {
		return
	}
	now := q.cfg.Clock.Now()
	q.active.addOrUpdate(&framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), Timestamp: now, Added: now})
	q.cond.Signal()
}

// Update records a change to a pending pod. A pod waiting as
// unschedulable is retried when its spec (or labels) changed: the change
// may be what makes it fit. Status-only changes, such as the scheduler's
// own condition updates, leave it where it is.
func (q *Queue) Update(old, cur *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unsafeUpdateNomination(cur)
	if q.unsafeReplace(cur, schedulingChanged(old, cur)) {
		return
	}
	now := q.cfg.Clock.Now()
	q.active.addOrUpdate(&framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(cur), Timestamp: now, Added: now})
	q.cond.Signal()
}

// unsafeReplace swaps in the new pod object wherever the pod is queued or
// in flight, and reports whether it was found.
func (q *Queue) unsafeReplace(pod *v1.Pod, changed bool) bool {
	uid := pod.UID
	if f, ok := q.inFlight[uid]; ok {
		f.latest = pod
		f.changed = f.changed || changed
		return true
	}
	if p := q.active.get(uid); p != nil {
		q.active.addOrUpdate(withPod(p, pod))
		return true
	}
	if p := q.backoff.get(uid); p != nil {
		q.backoff.addOrUpdate(withPod(p, pod))
		return true
	}
	if p, ok := q.unschedulable[uid]; ok {
		p = withPod(p, pod)
		if changed {
			delete(q.unschedulable, uid)
			q.unsafeMove(p)
		} else {
			q.unschedulable[uid] = p
		}
		return true
	}
	return false
}

func (q *Queue) unsafeUpdateNomination(pod *v1.Pod) {
	if nn := pod.Status.NominatedNodeName; nn != "" {
		q.nominated.add(framework.NewPodInfo(pod), nn)
	} else {
		q.nominated.remove(pod)
	}
	q.nominatedCount.Store(int64(len(q.nominated.node)))
}

// Delete drops a pod that was deleted or bound by someone else.
func (q *Queue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nominated.remove(pod)
	q.nominatedCount.Store(int64(len(q.nominated.node)))
	uid := pod.UID
	if f, ok := q.inFlight[uid]; ok {
		f.deleted = true
	}
	q.active.remove(uid)
	q.backoff.remove(uid)
	delete(q.unschedulable, uid)
}

// Pop blocks until a pod is active and returns it, or returns ErrClosed.
// The pod is in flight until Done or AddUnschedulableIfNotPresent.
func (q *Queue) Pop() (*framework.QueuedPodInfo, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil, ErrClosed
	}
	p := q.active.pop()
	p.Attempts++
	q.schedulingCycle++
	q.inFlight[p.Pod.UID] = &inFlightPod{}
	return p, nil
}

// SchedulingCycle is the number of pods popped so far; a failed pod is
// put back with the cycle it was popped in.
func (q *Queue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// Done ends a pod's flight after it was bound (or dropped).
func (q *Queue) Done(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, uid)
}

// AddUnschedulableIfNotPresent puts back a pod whose attempt in cycle
// failed. A pod rejected by plugins waits as unschedulable, unless an
// event arrived meanwhile; an error sends it to backoff. A pod deleted
// while in flight is dropped.
func (q *Queue) AddUnschedulableIfNotPresent(p *framework.QueuedPodInfo, cycle int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	uid := p.Pod.UID
	f := q.inFlight[uid]
	delete(q.inFlight, uid)
	if f != nil && f.deleted {
		return
	}
	if f != nil && f.latest != nil {
		p.PodInfo = framework.NewPodInfo(f.latest)
	}
	if q.active.get(uid) != nil || q.backoff.get(uid) != nil || q.unschedulable[uid] != nil {
		return
	}
	p.Timestamp = q.cfg.Clock.Now()
	if len(p.UnschedulablePlugins) == 0 || q.moveRequestCycle >= cycle || (f != nil && f.changed) {
		q.backoff.addOrUpdate(p)
		return
	}
	q.unschedulable[uid] = p
}

// Counts returns the number of pods in each sub-queue.
func (q *Queue) Counts() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable)
}

// withPod returns a copy of p describing pod.
func withPod(p *framework.QueuedPodInfo, pod *v1.Pod) *framework.QueuedPodInfo {
	c := *p
	c.PodInfo = framework.NewPodInfo(pod)
	return &c
}

// schedulingChanged reports whether anything the plugins read changed:
// labels, annotations or the spec; not the status or bookkeeping.
func schedulingChanged(old, cur *v1.Pod) bool {
	if old == nil {
		return true
	}
	return !reflect.DeepEqual(old.Labels, cur.Labels) ||
		!reflect.DeepEqual(old.Annotations, cur.Annotations) ||
		!reflect.DeepEqual(old.Spec, cur.Spec)
}
