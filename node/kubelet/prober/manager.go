package prober

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ContainerState is a container as the kubelet last saw it.
type ContainerState struct {
	// ID is the runtime's id of the container's current instance.
	ID        string
	Running   bool
	StartedAt time.Time
	// WasReady seeds the readiness of an instance the kubelet adopted
	// after a restart, so a ready pod does not flap to unready while its
	// first probe is pending.
	WasReady bool
}

// Config is what a Manager needs.
type Config struct {
	Runner *Runner
	// OnChange is called when a result changes, so the pod is synced.
	OnChange func(podUID types.UID)
	// OnFailure is called on each failed attempt, for an Unhealthy event.
	OnFailure func(pod *corev1.Pod, container string, kind Kind, message string)
	Logger    *slog.Logger
}

// Manager runs one worker per probe of each container of the pods it is
// given, and keeps their results.
type Manager struct {
	cfg     Config
	ctx     context.Context
	mu      sync.Mutex
	workers map[workerKey]*worker
	results map[workerKey]stored
	running sync.WaitGroup
}

type workerKey struct {
	pod       types.UID
	container string
	kind      Kind
}

// stored is a worker's result for one container instance.
type stored struct {
	id     string
	result Result
}

// NewManager returns a manager whose workers run until ctx ends.
func NewManager(ctx context.Context, cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, ctx: ctx, workers: map[workerKey]*worker{}, results: map[workerKey]stored{}}
}

// probesOf returns the probes of c by kind.
func probesOf(c *corev1.Container) map[Kind]*corev1.Probe {
	m := map[Kind]*corev1.Probe{}
	if c.LivenessProbe != nil {
		m[Liveness] = c.LivenessProbe
	}
	if c.ReadinessProbe != nil {
		m[Readiness] = c.ReadinessProbe
	}
	if c.StartupProbe != nil {
		m[Startup] = c.StartupProbe
	}
	return m
}

// Sync starts the workers of pod's probed containers and tells them the
// containers' current state; states is keyed by container name.
func (m *Manager) Sync(pod *corev1.Pod, podIP string, states map[string]ContainerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[workerKey]bool{}
	for _, c := range probedContainers(pod) {
		for kind, probe := range probesOf(c) {
			key := workerKey{pod: pod.UID, container: c.Name, kind: kind}
			seen[key] = true
			w, ok := m.workers[key]
			if !ok {
				w = newWorker(m, key, probe)
				m.workers[key] = w
				m.running.Add(1)
				go func() {
					defer m.running.Done()
					w.run(m.ctx)
				}()
			}
			w.update(target{pod: pod, container: c, podIP: podIP, state: states[c.Name]})
		}
	}
	for key, w := range m.workers {
		if key.pod == pod.UID && !seen[key] {
			w.close()
			delete(m.workers, key)
			delete(m.results, key)
		}
	}
}

// probedContainers are the containers probes run in: the regular ones
// and the restartable (sidecar) init containers.
func probedContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// Wait waits for the workers to stop, once the manager's context ended.
func (m *Manager) Wait() { m.running.Wait() }

// RemovePod stops the pod's workers and forgets their results.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, w := range m.workers {
		if key.pod == uid {
			w.close()
			delete(m.workers, key)
			delete(m.results, key)
		}
	}
}

// Result is the kind's result for the container instance id; Unknown
// when no worker has decided about that instance.
func (m *Manager) Result(pod types.UID, container, id string, kind Kind) Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.results[workerKey{pod: pod, container: container, kind: kind}]
	if !ok || s.id != id {
		return Unknown
	}
	return s.result
}

// Started reports whether instance id of c has started: it runs, and
// its startup probe, if any, succeeded.
func (m *Manager) Started(pod types.UID, c *corev1.Container, id string) bool {
	return c.StartupProbe == nil || m.Result(pod, c.Name, id, Startup) == Success
}

// Ready reports whether instance id of c is ready: it started, and its
// readiness probe, if any, succeeds.
func (m *Manager) Ready(pod types.UID, c *corev1.Container, id string) bool {
	if !m.Started(pod, c, id) {
		return false
	}
	return c.ReadinessProbe == nil || m.Result(pod, c.Name, id, Readiness) == Success
}

// Unhealthy returns the probe whose failure asks for instance id of c
// to be restarted: a failed liveness or startup probe.
func (m *Manager) Unhealthy(pod types.UID, c *corev1.Container, id string) (Kind, bool) {
	if c.StartupProbe != nil && m.Result(pod, c.Name, id, Startup) == Failure {
		return Startup, true
	}
	if c.LivenessProbe != nil && m.Result(pod, c.Name, id, Liveness) == Failure {
		return Liveness, true
	}
	return 0, false
}

// set stores a worker's result and tells whether it changed.
func (m *Manager) set(key workerKey, id string, r Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.results[key]
	m.results[key] = stored{id: id, result: r}
	return !ok || old != (stored{id: id, result: r})
}

// changed wakes the pod's other workers (a startup success ungates
// liveness and readiness) and the pod's sync.
func (m *Manager) changed(uid types.UID) {
	m.mu.Lock()
	for key, w := range m.workers {
		if key.pod == uid {
			w.wake()
		}
	}
	m.mu.Unlock()
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(uid)
	}
}
