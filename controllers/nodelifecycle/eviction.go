package nodelifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/go-logr/logr"
)

// ReasonDeletionByTaintManager is the reason of the DisruptionTarget
// condition of pods evicted for a NoExecute taint.
const ReasonDeletionByTaintManager = "DeletionByTaintManager"

// syncEviction evicts a pod from a NoExecute-tainted node once it no
// longer tolerates the node's taints: at once without a matching
// toleration, else when the shortest tolerationSeconds since the taint
// was added runs out. A toleration without tolerationSeconds tolerates
// forever.
func (c *Controller) syncEviction(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if err != nil || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return nil
	}
	node, err := c.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return nil
	}
	now := c.clock.Now()
	at, evict := c.evictionTime(pod, node)
	if !evict {
		return nil
	}
	if wait := at.Sub(now); wait > 0 {
		c.evictionQueue.AddAfter(key, wait)
		return nil
	}
	return c.evict(ctx, pod)
}

// evictionTime returns when pod must leave node, and false when never.
func (c *Controller) evictionTime(pod *corev1.Pod, node *corev1.Node) (time.Time, bool) {
	var at time.Time
	evict := false
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		start := c.taintStart(node.Name, t)
		matched := false
		var wait time.Duration
		finite := false
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !tol.ToleratesTaint(logr.Discard(), t, false) {
				continue
			}
			matched = true
			if tol.TolerationSeconds == nil {
				continue
			}
			d := time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second
			if !finite || d < wait {
				wait, finite = d, true
			}
		}
		if !matched {
			return start, true
		}
		if finite && (!evict || start.Add(wait).Before(at)) {
			at, evict = start.Add(wait), true
		}
	}
	return at, evict
}

// taintStart is when a NoExecute taint was added: its timeAdded, or when
// the controller first saw it.
func (c *Controller) taintStart(node string, t *corev1.Taint) time.Time {
	if t.TimeAdded != nil {
		return t.TimeAdded.Time
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := node + "/" + t.Key + "/" + string(t.Effect)
	if at, ok := c.firstSeen[k]; ok {
		return at
	}
	now := c.clock.Now()
	c.firstSeen[k] = now
	return now
}

func (c *Controller) evict(ctx context.Context, pod *corev1.Pod) error {
	c.recorder.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
	p := pod.DeepCopy()
	cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonDeletionByTaintManager,
		Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(c.clock.Now())}
	set := false
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == cond.Type {
			p.Status.Conditions[i], set = cond, true
		}
	}
	if !set {
		p.Status.Conditions = append(p.Status.Conditions, cond)
	}
	if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		c.log.Debug("marking an evicted pod", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("nodelifecycle: evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	c.log.Info("evicted pod from a tainted node", "pod", pod.Namespace+"/"+pod.Name, "node", pod.Spec.NodeName)
	return nil
}
