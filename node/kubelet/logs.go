package kubelet

import (
	"context"
	"fmt"
	"net/http"

	"cairn/node/kubelet/server"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// lookupError is a failed lookup of the kubelet API (a pod, container
// or log) and the HTTP status it answers.
type lookupError struct {
	status int
	msg    string
}

// Error implements error.
func (e *lookupError) Error() string { return e.msg }

// HTTPStatus is the status the kubelet API answers the error with.
func (e *lookupError) HTTPStatus() int { return e.status }

// ContainerLog finds the log of a container of a pod of this node: its
// current instance's, or with previous the one before. It implements
// server.Logs.
func (k *Kubelet) ContainerLog(ctx context.Context, namespace, podName, container string, previous bool) (server.Log, error) {
	pod, err := k.apiPod(namespace, podName)
	if err != nil {
		return server.Log{}, err
	}
	c := findContainer(pod, container)
	if c == nil {
		return server.Log{}, &lookupError{http.StatusBadRequest, fmt.Sprintf("container %s is not valid for pod %s", container, podName)}
	}
	rs, err := k.podRuntime(ctx, pod.UID)
	if err != nil {
		return server.Log{}, err
	}
	v := rs.Views[container]
	inst := v.Latest
	if previous {
		inst = v.Previous
		if inst == nil {
			return server.Log{}, &lookupError{http.StatusBadRequest, fmt.Sprintf("previous terminated container %q in pod %q not found", container, podName)}
		}
	}
	if inst == nil {
		reason := reasonContainerCreating
		for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
			if cs.Name == container && cs.State.Waiting != nil {
				reason = cs.State.Waiting.Reason
			}
		}
		return server.Log{}, &lookupError{http.StatusBadRequest, fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, podName, reason)}
	}
	if inst.LogPath == "" {
		return server.Log{}, &lookupError{http.StatusNotFound, fmt.Sprintf("container %q in pod %q has no log", container, podName)}
	}
	id := inst.ID
	return server.Log{
		Path: inst.LogPath,
		Running: func() bool {
			st, err := k.rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
			return err == nil && st.Status != nil && st.Status.State == runtimeapi.ContainerState_CONTAINER_RUNNING
		},
	}, nil
}

var _ server.Logs = (*Kubelet)(nil)

// apiPod finds a pod of this node for the kubelet API.
func (k *Kubelet) apiPod(namespace, name string) (*corev1.Pod, error) {
	select {
	case <-k.started:
	default:
		return nil, &lookupError{http.StatusServiceUnavailable, "the kubelet is starting"}
	}
	pod, err := k.podLister.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, &lookupError{http.StatusNotFound, fmt.Sprintf("pod %s/%s not found on node %s", namespace, name, k.cfg.NodeName)}
	}
	return pod, err
}
