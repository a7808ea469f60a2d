package statefulset

import (
	"context"
	"fmt"
	"time"

	"cairn/controllers/internal/podutil"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod states, as the StatefulSet controller sees them.

// isCreated reports whether pod exists in the API rather than being one
// this sync is about to create.
func isCreated(pod *corev1.Pod) bool { return pod.Status.Phase != "" }

func isFailed(pod *corev1.Pod) bool      { return pod.Status.Phase == corev1.PodFailed }
func isSucceeded(pod *corev1.Pod) bool   { return pod.Status.Phase == corev1.PodSucceeded }
func isTerminating(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }
func isPending(pod *corev1.Pod) bool     { return pod.Status.Phase == corev1.PodPending }

func isRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podutil.IsReady(pod)
}

func isRunningAndAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return pod.Status.Phase == corev1.PodRunning && podutil.IsAvailable(pod, minReadySeconds, now)
}

func isHealthy(pod *corev1.Pod) bool { return isRunningAndReady(pod) && !isTerminating(pod) }

// createStatefulPod creates pod's missing claims, then pod, recording events as
// Kubernetes does. A pod that already exists is an error: the cache was
// behind, and the next sync will see it.
func (sc *Controller) createStatefulPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	if err := sc.createClaims(ctx, set, pod); err != nil {
		sc.recordPod(set, pod, "create", err)
		return err
	}
	_, err := sc.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return err
	}
	sc.recordPod(set, pod, "create", err)
	return err
}

// createClaims creates the claims pod mounts that do not exist yet. A
// claim being deleted blocks the pod until it is gone, so that the pod
// does not start on storage about to vanish.
func (sc *Controller) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	for _, c := range claims(set, ordinal(pod)) {
		cur, err := sc.pvcLister.PersistentVolumeClaims(c.Namespace).Get(c.Name)
		switch {
		case apierrors.IsNotFound(err):
			_, err = sc.client.CoreV1().PersistentVolumeClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				sc.recorder.Eventf(set, corev1.EventTypeWarning, "FailedCreate",
					"create Claim %s for Pod %s in StatefulSet %s failed error: %v", c.Name, pod.Name, set.Name, err)
				return fmt.Errorf("statefulset: creating claim %s: %w", c.Name, err)
			}
			if err == nil {
				sc.recorder.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate",
					"create Claim %s Pod %s in StatefulSet %s success", c.Name, pod.Name, set.Name)
			}
		case err != nil:
			return err
		case cur.DeletionTimestamp != nil:
			return fmt.Errorf("statefulset: claim %s/%s is being deleted; pod %s waits for it to go", c.Namespace, c.Name, pod.Name)
		}
	}
	return nil
}

// deleteStatefulPod deletes pod, recording the event.
func (sc *Controller) deleteStatefulPod(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := sc.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
	if apierrors.IsNotFound(err) {
		return nil
	}
	sc.recordPod(set, pod, "delete", err)
	return err
}

// fixIdentity rewrites the identity labels of a pod that lost them; its
// spec (hostname, volumes) cannot change once created.
func (sc *Controller) fixIdentity(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	p := pod.DeepCopy()
	setIdentity(set, p)
	p.Spec = pod.Spec
	_, err := sc.client.CoreV1().Pods(p.Namespace).Update(ctx, p, metav1.UpdateOptions{})
	sc.recordPod(set, p, "update", err)
	return err
}

func (sc *Controller) recordPod(set *appsv1.StatefulSet, pod *corev1.Pod, verb string, err error) {
	reasons := map[string][2]string{
		"create": {"SuccessfulCreate", "FailedCreate"},
		"delete": {"SuccessfulDelete", "FailedDelete"},
		"update": {"SuccessfulUpdate", "FailedUpdate"},
	}[verb]
	if err == nil {
		sc.recorder.Eventf(set, corev1.EventTypeNormal, reasons[0], "%s Pod %s in StatefulSet %s successful", verb, pod.Name, set.Name)
		return
	}
	sc.recorder.Eventf(set, corev1.EventTypeWarning, reasons[1], "%s Pod %s in StatefulSet %s failed error: %v", verb, pod.Name, set.Name, err)
}
