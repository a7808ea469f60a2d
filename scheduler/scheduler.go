package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"cairn/scheduler/cache"
	"cairn/scheduler/config"
	"cairn/scheduler/framework"
	"cairn/scheduler/framework/runtime"
	"cairn/scheduler/plugins"
	"cairn/scheduler/queue"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Config configures a Scheduler.
type Config struct {
	// Client reaches the API. Its rate limits bound the scheduler's
	// throughput (every pod costs a binding and an event): raise QPS and
	// Burst well above client-go's defaults. The caller may wrap its
	// requests (a fencing header, say).
	Client kubernetes.Interface
	// Profile is the configuration; the zero value means config.Default().
	Profile config.Config
	// Logger defaults to a discarding logger.
	Logger *slog.Logger
	// Clock drives backoff and metrics; nil means the real clock.
	Clock clock.WithTicker
	// Identity names this scheduler instance in events and logs.
	Identity string
	// Metrics, if not nil, receives the scheduler's metrics.
	Metrics prometheus.Registerer
}

// Scheduler schedules pending pods until its context ends.
type Scheduler struct {
	client   kubernetes.Interface
	cfg      config.Config
	log      *slog.Logger
	clock    clock.WithTicker
	identity string

	cache    *cache.Cache
	snapshot *cache.Snapshot
	queue    *queue.Queue
	profiles map[string]*profile

	informers informers.SharedInformerFactory
	podLister corelisters.PodLister
	nsLister  corelisters.NamespaceLister
	metrics   *metrics
	// handlersSynced report when the event handlers have seen the
	// informers' initial lists: scheduling before that would see no nodes.
	handlersSynced []toolscache.InformerSynced

	// Owned by the scheduling goroutine.
	nextStartNodeIndex int
	rand               *rand.Rand
	rejected           []*framework.Status

	// async tracks bindings and status updates still running; writes
	// bounds how many run at once.
	async  sync.WaitGroup
	writes chan struct{}
}

// maxInFlightWrites bounds the bindings and status updates in flight.
// Beyond a few dozen the store gains no throughput, and an unbounded
// burst (thousands of pending pods at start-up) can starve it into
// leader elections, failing every write in flight at once. When the
// bound is reached, the scheduling loop waits: backpressure.
const maxInFlightWrites = 128

// profile is a framework and the event recorder of its scheduler name.
type profile struct {
	fwk      *runtime.Framework
	recorder *recorder
}

// New builds a scheduler; nothing runs until Run. A Scheduler runs once:
// make a new one for each leadership term.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Client == nil {
		return nil, errors.New("scheduler: Config.Client is required")
	}
	c := cfg.Profile
	// Defaulting fills the profiles in place: work on a copy.
	c.Profiles = append([]config.Profile(nil), c.Profiles...)
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		client:   cfg.Client,
		cfg:      c,
		log:      cfg.Logger,
		clock:    cfg.Clock,
		identity: cfg.Identity,
		cache:    cache.New(),
		snapshot: cache.NewEmptySnapshot(),
		profiles: map[string]*profile{},
		rand:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		writes:   make(chan struct{}, maxInFlightWrites),
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	s.informers = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithTransform(stripManagedFields))
	s.podLister = s.informers.Core().V1().Pods().Lister()
	s.nsLister = s.informers.Core().V1().Namespaces().Lister()

	events := map[string][]framework.ClusterEvent{}
	var less framework.LessFunc
	for _, pc := range c.Profiles {
		recorder := &recorder{}
		fwk, err := runtime.New(plugins.NewRegistry(), pc, runtime.Options{
			ClientSet:       cfg.Client,
			EventRecorder:   recorder,
			Snapshot:        s.snapshot,
			Nominator:       lateNominator{s},
			NamespaceLabels: s.namespaceLabels,
			Parallelism:     int(c.Parallelism),
			Logger:          s.log.With("profile", pc.SchedulerName),
		})
		if err != nil {
			return nil, fmt.Errorf("scheduler: %w", err)
		}
		s.profiles[pc.SchedulerName] = &profile{fwk: fwk, recorder: recorder}
		if less == nil {
			less = fwk.QueueSortFunc()
		}
		for name, evs := range fwk.PluginEvents() {
			events[name] = evs
		}
	}
	s.queue = queue.New(queue.Config{
		Less:               less,
		Clock:              s.clock,
		InitialBackoff:     c.InitialBackoff(),
		MaxBackoff:         c.MaxBackoff(),
		MaxInUnschedulable: c.PodMaxInUnschedulablePodsDuration.Duration,
		PluginEvents:       events,
	})
	m, err := newMetrics(cfg.Metrics, s.queue)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if s.handlersSynced, err = s.addEventHandlers(); err != nil {
		return nil, err
	}
	return s, nil
}

// Run starts the informers, waits for their caches, and schedules pods
// until ctx is done; it returns once in-flight bindings have ended.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.metrics.registerPending(); err != nil {
		return err
	}
	defer s.metrics.unregister()
	broadcaster := record.NewBroadcaster()
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	for name, p := range s.profiles {
		p.recorder.set(broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: name, Host: s.identity}))
	}
	s.informers.Start(ctx.Done())
	defer s.informers.Shutdown()
	for typ, ok := range s.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("scheduler: informer for %v did not sync", typ)
		}
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), s.handlersSynced...) {
		return nil
	}
	s.log.Info("scheduler started", "identity", s.identity, "nodes", s.cache.NodeCount())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.queue.Run(ctx)
	}()
	for ctx.Err() == nil {
		s.scheduleOne(ctx)
	}
	wg.Wait()
	s.async.Wait()
	s.log.Info("scheduler stopped", "identity", s.identity)
	return nil
}

// profileFor returns the profile responsible for pod, nil if none.
func (s *Scheduler) profileFor(pod *v1.Pod) *profile {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = config.DefaultSchedulerName
	}
	return s.profiles[name]
}

func (s *Scheduler) namespaceLabels(ns string) labels.Set {
	n, err := s.nsLister.Get(ns)
	if err != nil {
		return nil
	}
	return n.Labels
}

// stripManagedFields drops what the scheduler never reads, to keep the
// informer caches small.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// lateNominator forwards to the queue, which is built after the
// frameworks because it needs their queue sort and events.
type lateNominator struct{ s *Scheduler }

// NominatedPods implements framework.PodNominator.
func (n lateNominator) NominatedPods() map[string][]*framework.PodInfo {
	return n.s.queue.NominatedPods()
}

// NominatedPodsForNode implements framework.PodNominator.
func (n lateNominator) NominatedPodsForNode(node string) []*framework.PodInfo {
	return n.s.queue.NominatedPodsForNode(node)
}

// AddNominatedPod implements framework.PodNominator.
func (n lateNominator) AddNominatedPod(pi *framework.PodInfo, node string) {
	n.s.queue.AddNominatedPod(pi, node)
}

// DeleteNominatedPodIfExists implements framework.PodNominator.
func (n lateNominator) DeleteNominatedPodIfExists(pod *v1.Pod) {
	n.s.queue.DeleteNominatedPodIfExists(pod)
}

// goWrite runs write on its own goroutine once fewer than
// maxInFlightWrites are running; it blocks until then (or ctx ends, and
// write is not run). It reports whether write was started.
func (s *Scheduler) goWrite(ctx context.Context, write func()) bool {
	select {
	case s.writes <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	s.async.Add(1)
	go func() {
		defer func() {
			<-s.writes
			s.async.Done()
		}()
		write()
	}()
	return true
}

// since is the time elapsed since t on the scheduler's clock.
func (s *Scheduler) since(t time.Time) time.Duration { return s.clock.Since(t) }
