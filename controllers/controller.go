package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Options are the controller manager's settings (its flags).
type Options struct {
	// Workers is how many keys each controller syncs at once.
	Workers int
	// NodeMonitorGracePeriod is how long a node's Lease may go unrenewed
	// before the node is marked NotReady/Unknown.
	NodeMonitorGracePeriod time.Duration
	// NodeEvictionRate is how many nodes a second may have their pods
	// evicted, so that a partition does not evict everything at once.
	NodeEvictionRate float64
	// ClusterCIDR is the range node podCIDRs are cut from, NodeCIDRMaskSize
	// the size of each.
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// TerminatedPodGCThreshold is how many terminated pods may exist
	// before the oldest are deleted.
	TerminatedPodGCThreshold int
}

// DefaultOptions are Kubernetes' defaults.
func DefaultOptions() Options {
	return Options{
		Workers:                  5,
		NodeMonitorGracePeriod:   40 * time.Second,
		NodeEvictionRate:         0.1,
		ClusterCIDR:              "10.244.0.0/16",
		NodeCIDRMaskSize:         24,
		TerminatedPodGCThreshold: 12500,
	}
}

// Context is what a controller is built from. Informers obtained from
// Informers before the manager starts it are started and synced for the
// controller.
type Context struct {
	Client    kubernetes.Interface
	Config    *rest.Config // for dynamic and metadata clients (the garbage collector)
	Informers informers.SharedInformerFactory
	Logger    *slog.Logger
	Clock     clock.WithTicker
	Options   Options
	events    record.EventBroadcaster
}

// Recorder returns an event recorder reporting as component (e.g.
// "deployment-controller", as Kubernetes names them).
func (c *Context) Recorder(component string) record.EventRecorder {
	return c.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// Controller is one control loop. Run works with the given number of
// workers until ctx ends; the manager has synced its informers before.
type Controller interface {
	Run(ctx context.Context, workers int)
}

// Descriptor names a controller and builds it.
type Descriptor struct {
	// Name is what --controllers and logs call it, e.g. "deployment".
	Name string
	New  func(*Context) (Controller, error)
}

// Manager runs a set of controllers sharing one informer factory. It is a
// leader-only loop: Run is called with a client configuration whose writes
// are fenced on the current leadership.
type Manager struct {
	Descriptors []Descriptor
	// Disabled names controllers not to run.
	Disabled []string
	Options  Options
	Logger   *slog.Logger
	// Clock defaults to the real clock.
	Clock clock.WithTicker
}

// NewContext builds the context controllers are made from, for cfg. Tests
// of a single controller use it too.
func NewContext(cfg *rest.Config, client kubernetes.Interface, opts Options, log *slog.Logger, clk clock.WithTicker) *Context {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if log == nil {
		log = slog.Default()
	}
	events := record.NewBroadcaster()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &Context{
		Client: client, Config: cfg, Informers: informers.NewSharedInformerFactory(client, 0),
		Logger: log, Clock: clk, Options: opts, events: events,
	}
}

// Shutdown stops the context's event broadcaster.
func (c *Context) Shutdown() { c.events.Shutdown() }

// Run builds every enabled controller, starts and syncs their informers,
// and runs them until ctx ends.
func (m *Manager) Run(ctx context.Context, cfg *rest.Config) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	log := m.Logger
	if log == nil {
		log = slog.Default()
	}
	opts := m.Options
	if opts.Workers <= 0 {
		opts.Workers = DefaultOptions().Workers
	}
	cc := NewContext(cfg, client, opts, log, m.Clock)
	defer cc.Shutdown()
	type running struct {
		name string
		c    Controller
	}
	var ctrls []running
	for _, d := range m.Descriptors {
		if slices.Contains(m.Disabled, d.Name) {
			continue
		}
		c, err := d.New(cc)
		if err != nil {
			return fmt.Errorf("controllers: building %s: %w", d.Name, err)
		}
		ctrls = append(ctrls, running{d.Name, c})
	}
	cc.Informers.Start(ctx.Done())
	for typ, ok := range cc.Informers.WaitForCacheSync(ctx.Done()) {
		if !ok && ctx.Err() == nil {
			return fmt.Errorf("controllers: the %v informer did not sync", typ)
		}
	}
	log.Info("controllers started", "count", len(ctrls))
	var wg sync.WaitGroup
	for _, r := range ctrls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.c.Run(ctx, opts.Workers)
		}()
	}
	wg.Wait()
	cc.Informers.Shutdown()
	return nil
}
