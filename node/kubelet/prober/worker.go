package prober

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// target is what a worker probes.
type target struct {
	pod       *corev1.Pod
	container *corev1.Container
	podIP     string
	state     ContainerState
}

// worker runs one probe of one container, instance after instance.
type worker struct {
	m     *Manager
	key   workerKey
	probe *corev1.Probe
	kick  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu     sync.Mutex
	target target
}

func newWorker(m *Manager, key workerKey, probe *corev1.Probe) *worker {
	return &worker{m: m, key: key, probe: probe, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

func (w *worker) update(t target) {
	w.mu.Lock()
	w.target = t
	w.mu.Unlock()
	w.wake()
}

func (w *worker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *worker) close() { w.once.Do(func() { close(w.done) }) }

func (w *worker) current() target {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.target
}

func seconds(n, def int32) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

// run probes the current instance every period, from its start plus the
// initial delay. A liveness or startup failure puts the worker on hold
// until a new instance replaces the failed one.
func (w *worker) run(ctx context.Context) {
	period := seconds(w.probe.PeriodSeconds, 10)
	timeout := seconds(w.probe.TimeoutSeconds, 1)
	initialDelay := time.Duration(w.probe.InitialDelaySeconds) * time.Second
	var (
		instance string
		tr       tracker
		onHold   bool
		lastRun  time.Time
	)
	for {
		t := w.current()
		wait := period
		if t.state.Running && t.state.ID != "" {
			if t.state.ID != instance {
				instance, onHold, lastRun = t.state.ID, false, time.Time{}
				tr = tracker{result: w.key.kind.initial()}
				if w.key.kind == Readiness && t.state.WasReady {
					tr.result = Success
				}
				if w.m.set(w.key, instance, tr.result) {
					w.m.changed(w.key.pod)
				}
			}
			due := t.state.StartedAt.Add(initialDelay)
			if !lastRun.IsZero() {
				due = lastRun.Add(period)
			}
			now := time.Now()
			if !now.Before(due) && !onHold && w.ungated(t) {
				lastRun = now
				onHold = w.attempt(ctx, t, &tr, timeout)
				due = now.Add(period)
			}
			wait = max(time.Until(due), 10*time.Millisecond)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-w.done:
			timer.Stop()
			return
		case <-w.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// ungated reports whether the probe may run: liveness and readiness wait
// for a startup probe to succeed, and a startup probe stops once it has.
func (w *worker) ungated(t target) bool {
	if t.container.StartupProbe == nil {
		return true
	}
	started := w.m.Result(w.key.pod, w.key.container, t.state.ID, Startup) == Success
	if w.key.kind == Startup {
		return !started
	}
	return started
}

// attempt runs the probe once and records the outcome; it returns true
// when the container failed a liveness or startup probe.
func (w *worker) attempt(ctx context.Context, t target, tr *tracker, timeout time.Duration) bool {
	res, msg := w.m.cfg.Runner.Probe(ctx, w.probe.ProbeHandler, timeout,
		Target{Pod: t.pod, Container: t.container, ContainerID: t.state.ID, PodIP: t.podIP})
	if ctx.Err() != nil {
		return false
	}
	if res == Failure && w.m.cfg.OnFailure != nil {
		w.m.cfg.OnFailure(t.pod, t.container.Name, w.key.kind, msg)
	}
	if res == Unknown {
		return false
	}
	r, changed := tr.observe(res, w.probe.SuccessThreshold, w.probe.FailureThreshold)
	if changed {
		w.m.cfg.Logger.Debug("probe result changed", "pod", t.pod.Namespace+"/"+t.pod.Name, "container", w.key.container,
			"probe", w.key.kind.String(), "result", r.String(), "message", msg)
		if w.m.set(w.key, t.state.ID, r) {
			w.m.changed(w.key.pod)
		}
	}
	return r == Failure && w.key.kind != Readiness
}
