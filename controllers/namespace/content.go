package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// result is what a pass over a namespace's content found.
type result struct {
	discoveryErrs []error
	deleteErrs    []error
	// counts are the objects left, by resource; finalizers the objects
	// held by each finalizer.
	counts     map[string]int
	finalizers map[string]int
	// estimate is how long the slowest remaining pod may still take.
	estimate time.Duration
}

func (r *result) failed() bool    { return len(r.discoveryErrs)+len(r.deleteErrs) > 0 }
func (r *result) remaining() bool { return len(r.counts) > 0 }

// deleteContent deletes every namespaced object in ns and counts what is
// left (objects in a grace period or held by finalizers).
func (c *Controller) deleteContent(ctx context.Context, ns string) *result {
	res := &result{counts: map[string]int{}, finalizers: map[string]int{}}
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		// A group that failed discovery is reported; the others are
		// still emptied.
		if !discovery.IsGroupDiscoveryFailedError(err) {
			res.discoveryErrs = append(res.discoveryErrs, err)
			return res
		}
		res.discoveryErrs = append(res.discoveryErrs, err)
	}
	background := metav1.DeletePropagationBackground
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			api := c.metadata.Resource(gvr).Namespace(ns)
			switch {
			case slices.Contains(r.Verbs, "deletecollection"):
				err = api.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
			case slices.Contains(r.Verbs, "delete"):
				err = c.deleteEach(ctx, gvr, ns)
			default:
				continue
			}
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				res.deleteErrs = append(res.deleteErrs, fmt.Errorf("deleting %s: %w", gvr.GroupResource(), err))
				continue
			}
			left, err := api.List(ctx, metav1.ListOptions{})
			if err != nil {
				res.deleteErrs = append(res.deleteErrs, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err))
				continue
			}
			if len(left.Items) == 0 {
				continue
			}
			res.counts[gvr.GroupResource().String()] += len(left.Items)
			for _, item := range left.Items {
				for _, f := range item.Finalizers {
					res.finalizers[f]++
				}
				if item.DeletionTimestamp != nil {
					if left := item.DeletionTimestamp.Time.Sub(c.clock.Now()); left > res.estimate {
						res.estimate = left
					}
				}
			}
		}
	}
	return res
}

// deleteEach deletes the objects of a resource without deletecollection
// one by one.
func (c *Controller) deleteEach(ctx context.Context, gvr schema.GroupVersionResource, ns string) error {
	api := c.metadata.Resource(gvr).Namespace(ns)
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	background := metav1.DeletePropagationBackground
	for _, item := range list.Items {
		if err := api.Delete(ctx, item.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// conditions are the deletion conditions Kubernetes reports on a
// terminating namespace, True when something is wrong or left.
func (r *result) conditions(now metav1.Time) []corev1.NamespaceCondition {
	cond := func(t corev1.NamespaceConditionType, bad bool, badReason, goodReason, badMsg, goodMsg string) corev1.NamespaceCondition {
		c := corev1.NamespaceCondition{Type: t, Status: corev1.ConditionFalse, Reason: goodReason, Message: goodMsg, LastTransitionTime: now}
		if bad {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, badReason, badMsg
		}
		return c
	}
	return []corev1.NamespaceCondition{
		cond(corev1.NamespaceDeletionDiscoveryFailure, len(r.discoveryErrs) > 0, "DiscoveryFailed", "ResourcesDiscovered",
			fmt.Sprintf("Discovery failed for some groups: %v", errors.Join(r.discoveryErrs...)), "All resources successfully discovered"),
		cond(corev1.NamespaceDeletionGVParsingFailure, false, "GroupVersionParsingFailed", "ParsedGroupVersions",
			"", "All legacy kube types successfully parsed"),
		cond(corev1.NamespaceDeletionContentFailure, len(r.deleteErrs) > 0, "ContentDeletionFailed", "ContentDeleted",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(r.deleteErrs), errors.Join(r.deleteErrs...)),
			"All content successfully deleted, may be waiting on finalization"),
		cond(corev1.NamespaceContentRemaining, len(r.counts) > 0, "SomeResourcesRemain", "ContentRemoved",
			"Some resources are remaining: "+summary(r.counts, "resource instances"), "All content successfully removed"),
		cond(corev1.NamespaceFinalizersRemaining, len(r.finalizers) > 0, "SomeFinalizersRemain", "ContentHasNoFinalizers",
			"Some content in the namespace has finalizers remaining: "+summary(r.finalizers, "resource instances"),
			"All content-preserving finalizers finished"),
	}
}

// summary writes counts as "pods. has 2 resource instances, ...".
func summary(counts map[string]int, unit string) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s has %d %s", k, counts[k], unit)
	}
	return strings.Join(parts, ", ")
}

// writeConditions records res on ns, keeping transition times of
// conditions whose status did not change, and returns ns as stored.
func (c *Controller) writeConditions(ctx context.Context, ns *corev1.Namespace, res *result) (*corev1.Namespace, error) {
	want := res.conditions(metav1.NewTime(c.clock.Now()))
	cp := ns.DeepCopy()
	changed := false
	for _, w := range want {
		found := false
		for i := range cp.Status.Conditions {
			have := &cp.Status.Conditions[i]
			if have.Type != w.Type {
				continue
			}
			found = true
			if have.Status == w.Status && have.Reason == w.Reason && have.Message == w.Message {
				break
			}
			if have.Status == w.Status {
				w.LastTransitionTime = have.LastTransitionTime
			}
			*have = w
			changed = true
		}
		if !found {
			cp.Status.Conditions = append(cp.Status.Conditions, w)
			changed = true
		}
	}
	if !changed {
		return ns, nil
	}
	got, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("namespace: updating the status of %s: %w", ns.Name, err)
	}
	return got, nil
}
