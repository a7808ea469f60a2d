package kubelet

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ensureImage makes the container's image present as its pull policy
// says, and returns the image reference to create the container from,
// or why the container must wait (ErrImagePull, ImagePullBackOff,
// ErrImageNeverPull). Failed pulls are retried with a backoff, per pod
// and image.
func (k *Kubelet) ensureImage(ctx context.Context, w *podWorker, pod *corev1.Pod, c *corev1.Container, sb *runtimeapi.PodSandboxConfig) (string, *waiting) {
	if c.Image == "" {
		return "", &waiting{Reason: reasonInvalidImageName, Message: "container has no image"}
	}
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	st, err := k.rt.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		msg := fmt.Sprintf("Failed to inspect image %q: %v", c.Image, err)
		k.event(pod, c, corev1.EventTypeWarning, eventFailed, "%s", msg)
		return "", &waiting{Reason: reasonErrImagePull, Message: msg}
	}
	present := st.Image != nil
	policy := c.ImagePullPolicy
	if policy == "" {
		policy = corev1.PullIfNotPresent
	}
	switch {
	case policy == corev1.PullNever && !present:
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		k.event(pod, c, corev1.EventTypeWarning, eventErrImageNever, "%s", msg)
		return "", &waiting{Reason: reasonErrImageNeverPull, Message: msg}
	case present && policy != corev1.PullAlways:
		k.event(pod, c, corev1.EventTypeNormal, eventPulled, "Container image %q already present on machine", c.Image)
		return st.Image.Id, nil
	}
	key := string(pod.UID) + "/image/" + c.Image
	if failedAt, ok := w.pulls[c.Image]; ok {
		if wait := k.pullBackoff.Wait(key, failedAt, 0, time.Now()); wait > 0 {
			msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
			k.event(pod, c, corev1.EventTypeNormal, eventBackOff, "%s", msg)
			return "", &waiting{Reason: reasonImagePullBackOff, Message: msg}
		}
	}
	k.event(pod, c, corev1.EventTypeNormal, eventPulling, "Pulling image %q", c.Image)
	start := time.Now()
	resp, err := k.rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, SandboxConfig: sb})
	if err != nil {
		k.pullBackoff.Next(key, 0)
		w.pulls[c.Image] = time.Now()
		msg := fmt.Sprintf("Failed to pull image %q: %v", c.Image, err)
		k.event(pod, c, corev1.EventTypeWarning, eventFailed, "%s", msg)
		k.event(pod, c, corev1.EventTypeWarning, eventFailed, "Error: %s", reasonErrImagePull)
		return "", &waiting{Reason: reasonErrImagePull, Message: msg}
	}
	delete(w.pulls, c.Image)
	took := time.Since(start).Round(time.Millisecond)
	k.event(pod, c, corev1.EventTypeNormal, eventPulled, "Successfully pulled image %q in %s", c.Image, took)
	return resp.ImageRef, nil
}
