package nodelifecycle

import (
	"context"
	"time"

	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// nodeHealth is what the monitor saw of a node's heartbeats. Times are
// those of the controller's clock when it noticed a heartbeat change,
// never the heartbeat values themselves, so clock skew between a kubelet
// and the controller does not matter.
type nodeHealth struct {
	// probeTime is when a heartbeat (Ready condition or Lease renewal)
	// was last seen to move.
	probeTime time.Time
	// observed is false until the first pass recorded the heartbeats
	// the node had when the controller started watching it.
	observed  bool
	heartbeat metav1.Time
	renew     time.Time
	// deadAt is when MarkDead was called; it counts until a heartbeat
	// moves after it.
	deadAt time.Time
}

// unsafeHealth returns node's health record, creating one whose grace
// period starts now: a new leader gives every node a full grace period.
func (c *Controller) unsafeHealth(node string) *nodeHealth {
	h, ok := c.health[node]
	if !ok {
		h = &nodeHealth{probeTime: c.clock.Now()}
		c.health[node] = h
	}
	return h
}

// heartbeats returns node's Ready condition and Lease renewal time as
// the informers hold them.
func (c *Controller) heartbeats(name string) (*corev1.NodeCondition, time.Time) {
	var ready *corev1.NodeCondition
	if node, err := c.nodes.Get(name); err == nil {
		ready = clusterutil.NodeCondition(node, corev1.NodeReady)
	}
	var renew time.Time
	if lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(name); err == nil && lease.Spec.RenewTime != nil {
		renew = lease.Spec.RenewTime.Time
	}
	return ready, renew
}

func (c *Controller) monitorLoop(ctx context.Context) {
	t := c.clock.NewTicker(c.cfg.MonitorPeriod)
	defer t.Stop()
	for {
		c.monitor(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-c.wake:
		}
	}
}

// observation is a node and its Ready status after a monitor pass.
type observation struct {
	node  *corev1.Node
	ready corev1.ConditionStatus
}

// monitor is one pass over every node: mark silent nodes Unknown, work
// out each zone's disruption, then taint or untaint.
func (c *Controller) monitor(ctx context.Context) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		c.log.Error("listing nodes", "err", err)
		return
	}
	obs := make([]observation, 0, len(nodes))
	ready := countReady(nodes)
	for _, n := range nodes {
		// Events may have been missed: the pass looks at reports too.
		c.checkReports(n, ready)
		n = c.checkHealth(ctx, n)
		ready := corev1.ConditionUnknown
		if cond := clusterutil.NodeCondition(n, corev1.NodeReady); cond != nil {
			ready = cond.Status
		} else {
			ready = "" // never reported, within its startup grace
		}
		obs = append(obs, observation{n, ready})
	}
	if c.handleDisruption(ctx, obs) {
		return
	}
	for _, o := range obs {
		c.processNoExecute(ctx, o)
		if o.ready != corev1.ConditionTrue && o.ready != "" {
			c.markPodsNotReady(ctx, o.node)
		}
	}
}

// checkHealth notes heartbeat changes of node and, past its grace period
// (or once reported dead), sets its conditions to Unknown. It returns the
// node as it now is.
func (c *Controller) checkHealth(ctx context.Context, node *corev1.Node) *corev1.Node {
	now := c.clock.Now()
	ready := clusterutil.NodeCondition(node, corev1.NodeReady)
	_, renew := c.heartbeats(node.Name)
	c.mu.Lock()
	h := c.unsafeHealth(node.Name)
	moved := false
	if ready != nil && !ready.LastHeartbeatTime.Equal(&h.heartbeat) {
		h.heartbeat = ready.LastHeartbeatTime
		moved = true
	}
	if renew.After(h.renew) {
		h.renew = renew
		moved = true
	}
	if moved && h.observed {
		h.probeTime = now
	}
	h.observed = true
	if !h.deadAt.IsZero() && h.probeTime.After(h.deadAt) {
		h.deadAt = time.Time{}
	}
	grace := c.grace
	if ready == nil {
		grace = c.cfg.StartupGracePeriod
	}
	expired := !h.deadAt.IsZero() || now.Sub(h.probeTime) > grace
	c.mu.Unlock()
	if !expired {
		return node
	}
	updated, changed := unknownConditions(node, metav1.NewTime(now))
	if !changed {
		return node
	}
	got, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		c.log.Warn("marking a silent node Unknown", "node", node.Name, "err", err)
		return node
	}
	c.log.Info("node stopped posting status", "node", node.Name)
	c.recorder.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", node.Name)
	return got
}

// unknownConditions returns node with its Ready and pressure conditions
// Unknown, as Kubernetes sets them for a silent kubelet, and whether that
// changed anything.
func unknownConditions(node *corev1.Node, now metav1.Time) (*corev1.Node, bool) {
	n := node.DeepCopy()
	changed := false
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		cond := clusterutil.NodeCondition(n, t)
		switch {
		case cond == nil:
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown, Reason: ReasonNodeStatusNeverUpdated, Message: MessageNodeStatusNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: now,
			})
			changed = true
		case cond.Status != corev1.ConditionUnknown:
			cond.Status = corev1.ConditionUnknown
			cond.Reason, cond.Message = ReasonNodeStatusUnknown, MessageNodeStatusUnknown
			cond.LastTransitionTime = now
			changed = true
		}
	}
	return n, changed
}

// handleDisruption updates each zone's state and eviction rate from the
// pass's observations. When every zone is fully disrupted the control
// plane is the likelier one cut off: NoExecute taints are lifted and
// tainting stops; it reports true then, and the pass taints nothing.
func (c *Controller) handleDisruption(ctx context.Context, obs []observation) bool {
	type counts struct{ ready, notReady int }
	byZone := map[string]*counts{}
	for _, o := range obs {
		k := zoneKey(o.node)
		if byZone[k] == nil {
			byZone[k] = &counts{}
		}
		if o.ready == corev1.ConditionTrue {
			byZone[k].ready++
		} else if o.ready != "" {
			byZone[k].notReady++
		}
	}
	states := map[string]zoneState{}
	allFull := len(byZone) > 0
	for k, n := range byZone {
		states[k] = c.stateOf(n.ready, n.notReady)
		allFull = allFull && states[k] == zoneFull
	}

	c.mu.Lock()
	for k := range c.zones {
		if _, ok := byZone[k]; !ok {
			delete(c.zones, k)
		}
	}
	for k := range byZone {
		if c.zones[k] == nil {
			c.zones[k] = newZone()
		}
	}
	if allFull {
		if !c.allDisrupted {
			c.log.Warn("every node is not ready: assuming the control plane is cut off, stopping evictions")
		}
		c.allDisrupted = true
		for _, z := range c.zones {
			z.state = zoneFull
			z.setRate(0, c.clock)
		}
		c.mu.Unlock()
		for _, o := range obs {
			c.untaint(ctx, o.node)
		}
		return true
	}
	exiting := c.allDisrupted
	c.allDisrupted = false
	if exiting {
		// Nodes come back together: give each a fresh grace period
		// rather than tainting those whose heartbeats were lost in the
		// outage.
		now := c.clock.Now()
		for _, h := range c.health {
			h.probeTime = now
		}
		c.log.Info("nodes are ready again: resuming evictions")
	}
	for k, s := range states {
		z := c.zones[k]
		if exiting || z.state != s || z.limiter == nil {
			if z.state != s {
				c.log.Info("zone state changed", "zone", k, "from", z.state, "to", s)
			}
			z.state = s
			z.setRate(c.evictionRate(s, byZone[k].ready+byZone[k].notReady), c.clock)
		}
	}
	c.mu.Unlock()
	return false
}

// processNoExecute taints an unhealthy node (at the zone's rate; a node
// switching between unreachable and not-ready at once) and untaints a
// healthy one.
func (c *Controller) processNoExecute(ctx context.Context, o observation) {
	n := o.node
	var want, other corev1.Taint
	switch o.ready {
	case corev1.ConditionFalse:
		want, other = notReadyTaint(), unreachableTaint()
	case corev1.ConditionUnknown:
		want, other = unreachableTaint(), notReadyTaint()
	case corev1.ConditionTrue:
		c.untaint(ctx, n)
		return
	default:
		return
	}
	switch {
	case hasTaint(n.Spec.Taints, want):
	case hasTaint(n.Spec.Taints, other):
		if _, err := c.swapTaints(ctx, n.Name, []corev1.Taint{want}, []corev1.Taint{other}); err != nil {
			c.log.Warn("swapping NoExecute taints", "node", n.Name, "err", err)
		}
	default:
		c.mu.Lock()
		if z := c.zones[zoneKey(n)]; z != nil {
			z.add(n.Name)
		}
		c.mu.Unlock()
	}
}

// untaint lifts the NoExecute taints of a node that is reachable again.
func (c *Controller) untaint(ctx context.Context, n *corev1.Node) {
	c.mu.Lock()
	if z := c.zones[zoneKey(n)]; z != nil {
		z.remove(n.Name)
	}
	c.mu.Unlock()
	if !hasTaint(n.Spec.Taints, notReadyTaint()) && !hasTaint(n.Spec.Taints, unreachableTaint()) {
		return
	}
	wrote, err := c.swapTaints(ctx, n.Name, nil, []corev1.Taint{notReadyTaint(), unreachableTaint()})
	if err != nil {
		c.log.Warn("removing NoExecute taints", "node", n.Name, "err", err)
		return
	}
	if wrote {
		c.log.Info("node reachable again: NoExecute taints removed", "node", n.Name)
	}
}

// markPodsNotReady sets the Ready condition of the pods of an unhealthy
// node to False: nobody can vouch for them, and endpoints must stop
// sending them traffic.
func (c *Controller) markPodsNotReady(ctx context.Context, node *corev1.Node) {
	objs, err := c.podIndex.ByIndex(podsByNode, node.Name)
	if err != nil {
		return
	}
	now := metav1.NewTime(c.clock.Now())
	for _, o := range objs {
		pod, ok := o.(*corev1.Pod)
		if !ok || !clusterutil.PodReady(pod) || clusterutil.PodTerminal(pod) {
			continue
		}
		p := pod.DeepCopy()
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
				p.Status.Conditions[i].LastTransitionTime = now
			}
		}
		if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			c.log.Debug("marking a pod not ready", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
	}
}
