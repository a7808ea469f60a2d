// Package nodelifecycle watches node health, as Kubernetes' node
// lifecycle and taint eviction controllers do. A node whose Lease (and
// Ready heartbeat) has not been renewed for the grace period is marked
// Unknown; unhealthy nodes are tainted NoExecute at a bounded rate per
// zone, and their pods evicted once their tolerations run out; NoSchedule
// taints follow node conditions. A failure detector that learns sooner
// that a node is dead calls MarkDead; the agents' gossip does it through
// the Node: once enough peers annotated it with their reports
// (gossip.Agreed), the node is marked dead without waiting for its grace
// period, and it recovers once the reports are gone and its heartbeats
// move again.
package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "nodelifecycle"

// Reasons and messages Kubernetes uses for conditions it sets on behalf
// of a silent kubelet.
const (
	ReasonNodeStatusUnknown       = "NodeStatusUnknown"
	MessageNodeStatusUnknown      = "Kubelet stopped posting node status."
	ReasonNodeStatusNeverUpdated  = "NodeStatusNeverUpdated"
	MessageNodeStatusNeverUpdated = "Kubelet never posted node status."
)

// podsByNode indexes pods by spec.nodeName.
const podsByNode = "nodelifecycle.nodeName"

// Config tunes the controller beyond the manager's Options; zero values
// take Kubernetes' defaults.
type Config struct {
	// MonitorPeriod is how often node health is checked (5s).
	MonitorPeriod time.Duration
	// StartupGracePeriod is how long a node that never reported Ready
	// may stay silent (60s).
	StartupGracePeriod time.Duration
	// TaintPeriod is how often queued nodes are tainted NoExecute, within
	// the eviction rate (100ms).
	TaintPeriod time.Duration
	// SecondaryEvictionRate is the rate, in nodes per second, in a
	// partially disrupted zone of a large cluster (0.01).
	SecondaryEvictionRate float64
	// LargeClusterThreshold is the zone size above which a partially
	// disrupted zone still evicts, at the secondary rate (50).
	LargeClusterThreshold int
	// UnhealthyZoneThreshold is the share of not-ready nodes (with more
	// than two of them) that makes a zone partially disrupted (0.55).
	UnhealthyZoneThreshold float64
	// Built, when set, is given the controller once it is built, so that
	// a failure detector can call MarkDead.
	Built func(*Controller)
}

func (c Config) withDefaults() Config {
	if c.MonitorPeriod <= 0 {
		c.MonitorPeriod = 5 * time.Second
	}
	if c.StartupGracePeriod <= 0 {
		c.StartupGracePeriod = 60 * time.Second
	}
	if c.TaintPeriod <= 0 {
		c.TaintPeriod = 100 * time.Millisecond
	}
	if c.SecondaryEvictionRate <= 0 {
		c.SecondaryEvictionRate = 0.01
	}
	if c.LargeClusterThreshold <= 0 {
		c.LargeClusterThreshold = 50
	}
	if c.UnhealthyZoneThreshold <= 0 {
		c.UnhealthyZoneThreshold = 0.55
	}
	return c
}

// Descriptor registers the controller with the manager.
func Descriptor(cfg Config) controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		ctl, err := New(c, cfg)
		if err == nil && cfg.Built != nil {
			cfg.Built(ctl)
		}
		return ctl, err
	}}
}

// Controller is the node lifecycle controller.
type Controller struct {
	client      kubernetes.Interface
	nodes       corelisters.NodeLister
	leases      coordlisters.LeaseLister
	pods        corelisters.PodLister
	podIndex    cache.Indexer
	clock       clock.WithTicker
	recorder    record.EventRecorder
	log         *slog.Logger
	cfg         Config
	grace       time.Duration
	evictionQPS float64

	// conditionQueue keeps NoSchedule taints in line with conditions,
	// evictionQueue evicts pods from NoExecute-tainted nodes.
	conditionQueue clusterutil.Queue
	evictionQueue  clusterutil.Queue
	// wake asks the monitor for a pass now (MarkDead).
	wake chan struct{}

	mu sync.Mutex
	// health is what the monitor knows of each node.
	health map[string]*nodeHealth
	// zones are the per-zone NoExecute tainting queues and states.
	zones map[string]*zone
	// allDisrupted is whether every zone was fully disrupted at the last
	// pass: the control plane, not the nodes, is then likely cut off.
	allDisrupted bool
	// firstSeen stamps NoExecute taints that carry no timeAdded, by
	// node and taint key, so their toleration periods have a start.
	firstSeen map[string]time.Time
}

// New builds the controller on c's informers. Options.NodeMonitorGracePeriod
// and Options.NodeEvictionRate set the grace period and the primary
// eviction rate.
func New(c *controllers.Context, cfg Config) (*Controller, error) {
	cfg = cfg.withDefaults()
	defaults := controllers.DefaultOptions()
	grace := c.Options.NodeMonitorGracePeriod
	if grace <= 0 {
		grace = defaults.NodeMonitorGracePeriod
	}
	rate := c.Options.NodeEvictionRate
	if rate < 0 {
		rate = defaults.NodeEvictionRate
	}
	nodeInf := c.Informers.Core().V1().Nodes()
	podInf := c.Informers.Core().V1().Pods()
	leaseInf := c.Informers.Coordination().V1().Leases()
	if err := podInf.Informer().AddIndexers(cache.Indexers{podsByNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("nodelifecycle: %w", err)
	}
	ctl := &Controller{
		client: c.Client, nodes: nodeInf.Lister(), leases: leaseInf.Lister(), pods: podInf.Lister(),
		podIndex: podInf.Informer().GetIndexer(), clock: c.Clock,
		recorder: c.Recorder("node-controller"), log: c.Logger.With("controller", Name),
		cfg: cfg, grace: grace, evictionQPS: rate,
		conditionQueue: clusterutil.NewQueue(Name+"-conditions", c.Clock),
		evictionQueue:  clusterutil.NewQueue(Name+"-eviction", c.Clock),
		wake:           make(chan struct{}, 1),
		health:         map[string]*nodeHealth{}, zones: map[string]*zone{}, firstSeen: map[string]time.Time{},
	}
	if _, err := nodeInf.Informer().AddEventHandler(ctl.nodeHandlers()); err != nil {
		return nil, fmt.Errorf("nodelifecycle: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(ctl.podHandlers()); err != nil {
		return nil, fmt.Errorf("nodelifecycle: %w", err)
	}
	// Only the lease lister is needed; registering the informer starts it.
	leaseInf.Informer()
	return ctl, nil
}

func (c *Controller) nodeHandlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				c.conditionQueue.Add(n.Name)
				c.enqueuePodsOn(n.Name)
				c.checkReports(n, -1)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 {
				return
			}
			c.conditionQueue.Add(n.Name)
			if !sameNoExecuteTaints(o, n) {
				c.enqueuePodsOn(n.Name)
			}
			c.checkReports(n, -1)
		},
		DeleteFunc: func(obj any) {
			if n, ok := clusterutil.Untombstone(obj).(*corev1.Node); ok {
				c.forget(n.Name)
			}
		},
	}
}

func (c *Controller) podHandlers() cache.ResourceEventHandlerFuncs {
	enqueue := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			if key, ok := clusterutil.KeyOf(p); ok {
				c.evictionQueue.Add(key)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if ok1 && ok2 && (o.Spec.NodeName != n.Spec.NodeName || !equality.Semantic.DeepEqual(o.Spec.Tolerations, n.Spec.Tolerations)) {
				enqueue(n)
			}
		},
	}
}

func (c *Controller) enqueuePodsOn(node string) {
	objs, err := c.podIndex.ByIndex(podsByNode, node)
	if err != nil {
		return
	}
	for _, o := range objs {
		if key, ok := clusterutil.KeyOf(o); ok {
			c.evictionQueue.Add(key)
		}
	}
}

// Run monitors nodes, taints them and evicts their pods until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for _, f := range []func(){
		func() { c.monitorLoop(ctx) },
		func() { c.taintLoop(ctx) },
		func() { clusterutil.RunWorkers(ctx, c.log, c.conditionQueue, workers, c.syncConditionTaints) },
		func() { clusterutil.RunWorkers(ctx, c.log, c.evictionQueue, workers, c.syncEviction) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	wg.Wait()
}

// MarkDead records that a failure detector found node dead: the next
// monitor pass, which it triggers at once, treats the node as silent
// past its grace period. Only a heartbeat that moves after the report
// revives the node, so a wrong report costs one round of taints, not the
// node.
func (c *Controller) MarkDead(node string) {
	ready, renew := c.heartbeats(node)
	c.mu.Lock()
	h := c.unsafeHealth(node)
	if ready != nil {
		h.heartbeat = ready.LastHeartbeatTime
	}
	if renew.After(h.renew) {
		h.renew = renew
	}
	h.observed = true
	h.deadAt = c.clock.Now()
	c.mu.Unlock()
	c.log.Info("node reported dead", "node", node)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// forget drops a deleted node.
func (c *Controller) forget(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.health, node)
	for _, z := range c.zones {
		z.remove(node)
	}
	for k := range c.firstSeen {
		if len(k) > len(node) && k[:len(node)+1] == node+"/" {
			delete(c.firstSeen, k)
		}
	}
}

// syncConditionTaints keeps a node's NoSchedule taints in line with its
// conditions.
func (c *Controller) syncConditionTaints(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if err != nil {
		return nil // deleted
	}
	want := conditionTaints(node)
	have := managedConditionTaints(node)
	var add, remove []corev1.Taint
	for _, t := range want {
		if !hasTaint(have, t) {
			add = append(add, t)
		}
	}
	for _, t := range have {
		if !hasTaint(want, t) {
			remove = append(remove, t)
		}
	}
	if len(add)+len(remove) == 0 {
		return nil
	}
	_, err = c.swapTaints(ctx, name, add, remove)
	return err
}

func sameNoExecuteTaints(a, b *corev1.Node) bool {
	var x, y []corev1.Taint
	for _, t := range a.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			x = append(x, t)
		}
	}
	for _, t := range b.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			y = append(y, t)
		}
	}
	if len(x) != len(y) {
		return false
	}
	for _, t := range x {
		if !hasTaint(y, t) {
			return false
		}
	}
	return true
}
