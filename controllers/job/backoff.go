package job

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// backoffRecord is what decides when a failed job may create its next
// pod: the failures since the last success, and when the last one
// happened.
type backoffRecord struct {
	failures    int
	lastFailure time.Time
}

// backoffStore keeps a record per job key. It lives in memory, as in
// Kubernetes: a new leader starts without delays, which errs on the side
// of retrying.
type backoffStore struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{records: map[string]backoffRecord{}} }

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[key] = r
}

func (s *backoffStore) delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}

// next folds newly finished pods into r. A success resets the count;
// failures after the last success count. Pods that finished before the
// recorded last failure were already counted and are skipped, so folding
// the same pods twice changes nothing.
func (r backoffRecord) next(succeeded, failed []*corev1.Pod, now time.Time) backoffRecord {
	finished := func(p *corev1.Pod) time.Time { return finishTime(p, now) }
	var lastSuccess time.Time
	for _, p := range succeeded {
		if t := finished(p); t.After(lastSuccess) {
			lastSuccess = t
		}
	}
	if len(succeeded) > 0 {
		r = backoffRecord{}
	}
	times := make([]time.Time, 0, len(failed))
	for _, p := range failed {
		times = append(times, finished(p))
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for _, t := range times {
		if t.Before(lastSuccess) || (!r.lastFailure.IsZero() && !t.After(r.lastFailure)) {
			continue
		}
		r.failures++
		r.lastFailure = t
	}
	return r
}

// delay is how long after the last failure the next pod may be created:
// base doubled per failure since the last success, capped at max.
func (r backoffRecord) delay(base, max time.Duration) time.Duration {
	if r.failures == 0 {
		return 0
	}
	d := base
	for i := 1; i < r.failures && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// remaining is how long the job must still wait before creating pods.
func (r backoffRecord) remaining(base, max time.Duration, now time.Time) time.Duration {
	if r.failures == 0 {
		return 0
	}
	return max0(r.lastFailure.Add(r.delay(base, max)).Sub(now))
}

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// finishTime is when pod finished: its last container's termination, or
// when it was marked for deletion, or (for a pod that says nothing) now.
func finishTime(p *corev1.Pod, now time.Time) time.Time {
	var t time.Time
	for _, cs := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, s := range cs {
			if term := s.State.Terminated; term != nil && term.FinishedAt.Time.After(t) {
				t = term.FinishedAt.Time
			}
		}
	}
	if !t.IsZero() {
		return t
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Time
	}
	return now
}
