// Package podgc deletes pods nobody else will, as Kubernetes' pod garbage
// collector does: pods bound to nodes that no longer exist, terminated
// pods beyond a threshold (oldest first), terminating pods that never
// reached a node, and terminating pods on nodes an administrator declared
// out of service.
package podgc

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"
)

// Name is the controller's name in --controllers and logs.
const Name = "podgc"

// TaintOutOfService is the taint an administrator puts on a node known to
// be down for good, so that its terminating pods are force-deleted.
const TaintOutOfService = "node.kubernetes.io/out-of-service"

// ReasonDeletionByPodGC is the reason of the DisruptionTarget condition
// put on pods deleted because their node is gone.
const ReasonDeletionByPodGC = "DeletionByPodGC"

// Config tunes the collector; zero values take Kubernetes' defaults.
type Config struct {
	// CheckPeriod is how often pods are examined (20s).
	CheckPeriod time.Duration
	// Quarantine is how long a node must have been missing before its
	// pods are deleted (40s): the node is looked up again then, so a node
	// only briefly absent from the cache does not lose its pods.
	Quarantine time.Duration
}

func (c Config) withDefaults() Config {
	if c.CheckPeriod <= 0 {
		c.CheckPeriod = 20 * time.Second
	}
	if c.Quarantine <= 0 {
		c.Quarantine = 40 * time.Second
	}
	return c
}

// Descriptor registers the collector with the manager.
func Descriptor(cfg Config) controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c, cfg)
	}}
}

// Controller is the pod garbage collector.
type Controller struct {
	client    kubernetes.Interface
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	clock     clock.WithTicker
	cfg       Config
	threshold int
	log       *slog.Logger
	// missingSince is when each node pods are bound to was first found
	// missing; only the collector's goroutine uses it.
	missingSince map[string]time.Time
}

// New builds the collector; Options.TerminatedPodGCThreshold of zero or
// less keeps every terminated pod.
func New(c *controllers.Context, cfg Config) (*Controller, error) {
	ctl := &Controller{
		client: c.Client, pods: c.Informers.Core().V1().Pods().Lister(), nodes: c.Informers.Core().V1().Nodes().Lister(),
		clock: c.Clock, cfg: cfg.withDefaults(), threshold: c.Options.TerminatedPodGCThreshold,
		log: c.Logger.With("controller", Name), missingSince: map[string]time.Time{},
	}
	// Registering the informers is what makes the manager start them.
	c.Informers.Core().V1().Pods().Informer()
	c.Informers.Core().V1().Nodes().Informer()
	return ctl, nil
}

// Run collects every CheckPeriod until ctx ends. The collector is a
// periodic sweep rather than a queue: what it looks for (a node gone for
// a while, a count over a threshold) is not an event of one object.
func (c *Controller) Run(ctx context.Context, _ int) {
	t := c.clock.NewTicker(c.cfg.CheckPeriod)
	defer t.Stop()
	for {
		c.gc(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (c *Controller) gc(ctx context.Context) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		c.log.Error("listing pods", "err", err)
		return
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		c.log.Error("listing nodes", "err", err)
		return
	}
	if c.threshold > 0 {
		c.gcTerminated(ctx, pods)
	}
	c.gcOrphaned(ctx, pods, nodes)
	c.gcUnscheduledTerminating(ctx, pods)
	c.gcOutOfService(ctx, pods, nodes)
}

// gcTerminated deletes the oldest terminated pods beyond the threshold.
func (c *Controller) gcTerminated(ctx context.Context, pods []*corev1.Pod) {
	var done []*corev1.Pod
	for _, p := range pods {
		if clusterutil.PodTerminal(p) && p.DeletionTimestamp == nil {
			done = append(done, p)
		}
	}
	excess := len(done) - c.threshold
	if excess <= 0 {
		return
	}
	sort.Slice(done, func(i, j int) bool { return olderFirst(done[i], done[j]) })
	c.log.Info("deleting terminated pods over the threshold", "count", excess, "threshold", c.threshold)
	for _, p := range done[:excess] {
		c.forceDelete(ctx, p, nil)
	}
}

// olderFirst orders pods by creation, names breaking ties (creation
// timestamps have one-second resolution).
func olderFirst(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
}

// gcOrphaned deletes pods bound to nodes that have been missing for the
// quarantine period and are still missing when asked for directly.
func (c *Controller) gcOrphaned(ctx context.Context, pods []*corev1.Pod, nodes []*corev1.Node) {
	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	now := c.clock.Now()
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" && !exists[p.Spec.NodeName] {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	for name := range c.missingSince {
		if _, ok := byNode[name]; !ok {
			delete(c.missingSince, name)
		}
	}
	for name, orphans := range byNode {
		since, ok := c.missingSince[name]
		if !ok {
			c.missingSince[name] = now
			continue
		}
		if now.Sub(since) < c.cfg.Quarantine {
			continue
		}
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			delete(c.missingSince, name)
			continue
		}
		if !apierrors.IsNotFound(err) {
			c.log.Warn("checking a missing node", "node", name, "err", err)
			continue
		}
		c.log.Info("deleting pods of a deleted node", "node", name, "count", len(orphans))
		for _, p := range orphans {
			c.forceDelete(ctx, p, &corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: ReasonDeletionByPodGC, Message: "PodGC: node no longer exists",
			})
		}
	}
}

// gcUnscheduledTerminating force-deletes terminating pods that never
// reached a node: no kubelet will ever finish them.
func (c *Controller) gcUnscheduledTerminating(ctx context.Context, pods []*corev1.Pod) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			c.forceDelete(ctx, p, nil)
		}
	}
}

// gcOutOfService force-deletes terminating pods on nodes that are not
// ready and tainted out-of-service: their kubelet is known to be gone,
// so their volumes and names can be released at once.
func (c *Controller) gcOutOfService(ctx context.Context, pods []*corev1.Pod, nodes []*corev1.Node) {
	down := map[string]bool{}
	for _, n := range nodes {
		if ready := clusterutil.NodeCondition(n, corev1.NodeReady); ready != nil && ready.Status == corev1.ConditionTrue {
			continue
		}
		for _, t := range n.Spec.Taints {
			if t.Key == TaintOutOfService {
				down[n.Name] = true
			}
		}
	}
	if len(down) == 0 {
		return
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && down[p.Spec.NodeName] {
			c.forceDelete(ctx, p, &corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: ReasonDeletionByPodGC, Message: "PodGC: node is out of service",
			})
		}
	}
}

// forceDelete marks a running pod Failed (with cond, when given) so that
// its owner counts it, then deletes it without grace.
func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition) {
	if !clusterutil.PodTerminal(pod) {
		p := pod.DeepCopy()
		p.Status.Phase = corev1.PodFailed
		if cond != nil {
			cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
			setCondition(&p.Status, *cond)
		}
		if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Warn("marking a pod failed before deleting it", "pod", podRef(pod), "err", err)
		}
	}
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64), Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		c.log.Warn("deleting a pod", "pod", podRef(pod), "err", err)
		return
	}
	c.log.Debug("deleted pod", "pod", podRef(pod))
}

func setCondition(s *corev1.PodStatus, cond corev1.PodCondition) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == cond.Type {
			s.Conditions[i] = cond
			return
		}
	}
	s.Conditions = append(s.Conditions, cond)
}

func podRef(p *corev1.Pod) string { return fmt.Sprintf("%s/%s", p.Namespace, p.Name) }
