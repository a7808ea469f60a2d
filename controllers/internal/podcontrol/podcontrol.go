// Package podcontrol creates and deletes a workload controller's pods and
// records the events Kubernetes records for them (SuccessfulCreate,
// FailedCreate, SuccessfulDelete, FailedDelete on the owner).
package podcontrol

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Event reasons, as Kubernetes' pod control records them.
const (
	ReasonSuccessfulCreate = "SuccessfulCreate"
	ReasonFailedCreate     = "FailedCreate"
	ReasonSuccessfulDelete = "SuccessfulDelete"
	ReasonFailedDelete     = "FailedDelete"
)

// SlowStartInitialBatchSize is the first batch of SlowStartBatch.
const SlowStartInitialBatchSize = 1

// Control creates and deletes pods on behalf of an owner.
type Control struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
}

// FromTemplate builds a pod from template for parent: template labels,
// annotations and finalizers, a copy of the spec, ref as owner reference,
// and a generated name prefixed "<parent>-" (or "<parent>" should the dash
// make an invalid name).
func FromTemplate(template *corev1.PodTemplateSpec, parent metav1.Object, ref *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Labels:       copyMap(template.Labels),
			Annotations:  copyMap(template.Annotations),
			Finalizers:   append([]string(nil), template.Finalizers...),
			GenerateName: namePrefix(parent.GetName()),
			Namespace:    parent.GetNamespace(),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if ref != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, *ref)
	}
	return pod
}

func namePrefix(name string) string {
	prefix := name + "-"
	if len(validation.IsDNS1123Subdomain(prefix+"x")) != 0 {
		return name
	}
	return prefix
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Create creates pod in its namespace and records the outcome on parent.
func (c *Control) Create(ctx context.Context, pod *corev1.Pod, parent runtime.Object) (*corev1.Pod, error) {
	if len(pod.Labels) == 0 {
		return nil, fmt.Errorf("podcontrol: refusing to create a pod without labels: its owner could never select it")
	}
	created, err := c.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// A terminating namespace refuses every create; it is not news.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.Recorder.Eventf(parent, corev1.EventTypeWarning, ReasonFailedCreate, "Error creating: %v", err)
		}
		return nil, err
	}
	c.Recorder.Eventf(parent, corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created pod: %v", created.Name)
	return created, nil
}

// Delete deletes the pod namespace/name and records the outcome on
// parent. A pod already gone is reported as NotFound without an event.
func (c *Control) Delete(ctx context.Context, namespace, name string, parent runtime.Object) error {
	err := c.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		c.Recorder.Eventf(parent, corev1.EventTypeWarning, ReasonFailedDelete, "Error deleting: %v", err)
		return err
	}
	c.Recorder.Eventf(parent, corev1.EventTypeNormal, ReasonSuccessfulDelete, "Deleted pod: %v", name)
	return nil
}

// SlowStartBatch calls fn count times, in parallel batches of 1, 2, 4, ...
// and stops after the first batch with a failure, so that a controller
// whose creations all fail (quota, admission) makes a handful of requests
// rather than count. It returns how many calls succeeded and the first
// error.
func SlowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining, successes := count, 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		successes += batch - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
		remaining -= batch
	}
	return successes, nil
}
