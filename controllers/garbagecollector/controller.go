// Package garbagecollector deletes objects whose owners are gone, as
// Kubernetes' garbage collector does. It builds a graph of
// ownerReferences from informers over every served resource and:
//
//   - deletes a dependent once none of its owners exists (checked in the
//     API, by uid), including owners deleted while no collector ran;
//   - for an owner deleted in the foreground (foregroundDeletion
//     finalizer), deletes its dependents and removes the finalizer once
//     the dependents with blockOwnerDeletion are gone;
//   - for an owner deleted with the orphan policy (orphan finalizer),
//     removes the owner references to it, then the finalizer.
package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cairn/controllers"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "garbagecollector"

// Config tunes the collector; zero values take the defaults.
type Config struct {
	// DiscoveryPeriod is how often served resources are listed again, to
	// watch resources added since (30s).
	DiscoveryPeriod time.Duration
	// SyncTimeout bounds the wait for the informers' first lists before
	// the collector starts deleting (30s); a resource that cannot be
	// listed must not stop collection everywhere.
	SyncTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.DiscoveryPeriod <= 0 {
		c.DiscoveryPeriod = 30 * time.Second
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = 30 * time.Second
	}
	return c
}

// Descriptor registers the collector with the manager.
func Descriptor(cfg Config) controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c, cfg)
	}}
}

// Controller is the garbage collector.
type Controller struct {
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	recorder  record.EventRecorder
	clock     clock.WithTicker
	log       *slog.Logger
	cfg       Config

	graph *graph
	// changes feeds the graph builder; deleteQueue and orphanQueue the
	// workers.
	changes     workqueue.TypedInterface[*event]
	deleteQueue workqueue.TypedRateLimitingInterface[*node]
	orphanQueue workqueue.TypedRateLimitingInterface[*node]
	absent      *absentCache

	mu       sync.Mutex
	monitors map[schema.GroupVersionResource]*monitor
}

// New builds the collector; it needs c.Config to watch every resource.
func New(c *controllers.Context, cfg Config) (*Controller, error) {
	if c.Config == nil {
		return nil, errors.New("garbagecollector: the collector needs a client configuration")
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	md, err := metadata.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("garbagecollector: %w", err)
	}
	return &Controller{
		dynamic: dyn, metadata: md, discovery: dc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		recorder: c.Recorder("garbage-collector-controller"), clock: c.Clock, log: c.Logger.With("controller", Name), cfg: cfg.withDefaults(),
		graph:       newGraph(),
		changes:     workqueue.NewTyped[*event](),
		deleteQueue: newNodeQueue(Name + "-delete"),
		orphanQueue: newNodeQueue(Name + "-orphan"),
		absent:      newAbsentCache(4096),
		monitors:    map[schema.GroupVersionResource]*monitor{},
	}, nil
}

func newNodeQueue(name string) workqueue.TypedRateLimitingInterface[*node] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
		workqueue.TypedRateLimitingQueueConfig[*node]{Name: name})
}

// Run watches every deletable resource, waits for the first lists, and
// collects until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.changes.ShutDown()
	defer c.deleteQueue.ShutDown()
	defer c.orphanQueue.ShutDown()
	defer c.stopMonitors()

	wg.Add(1)
	go func() {
		defer wg.Done()
		c.buildGraph()
	}()
	if err := c.syncMonitors(ctx); err != nil {
		c.log.Warn("discovering resources", "err", err)
	}
	c.waitForMonitors(ctx)
	c.log.Info("garbage collector synced", "resources", len(c.monitors))
	for i := 0; i < max(workers, 1); i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for c.processDelete(ctx) {
			}
		}()
		go func() {
			defer wg.Done()
			for c.processOrphan(ctx) {
			}
		}()
	}
	t := c.clock.NewTicker(c.cfg.DiscoveryPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			c.mapper.Reset()
			if err := c.syncMonitors(ctx); err != nil {
				c.log.Warn("discovering resources", "err", err)
			}
		}
	}
}

// buildGraph applies changes to the graph one at a time.
func (c *Controller) buildGraph() {
	for {
		ev, quit := c.changes.Get()
		if quit {
			return
		}
		c.processEvent(ev)
		c.changes.Done(ev)
	}
}

// resolve maps owner-reference coordinates to a resource, refreshing the
// discovery cache once when the kind is unknown (a resource added since).
func (c *Controller) resolve(apiVersion, kind string) (*meta.RESTMapping, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	m, err := c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	}
	return m, err
}
