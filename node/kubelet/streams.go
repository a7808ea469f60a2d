package kubelet

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"cairn/node/kubelet/server"
	"cairn/node/runtime"
)

// RunningContainer finds the running instance of a container of a pod of
// this node, for exec. It implements server.Streams.
func (k *Kubelet) RunningContainer(ctx context.Context, namespace, podName, container string) (string, error) {
	pod, err := k.apiPod(namespace, podName)
	if err != nil {
		return "", err
	}
	if findContainer(pod, container) == nil {
		return "", &lookupError{http.StatusBadRequest, fmt.Sprintf("container %s is not valid for pod %s", container, podName)}
	}
	rs, err := k.podRuntime(ctx, pod.UID)
	if err != nil {
		return "", err
	}
	if inst := rs.Views[container].Latest; inst != nil && inst.State == stateRunning {
		return inst.ID, nil
	}
	return "", &lookupError{http.StatusBadRequest, fmt.Sprintf("container %s in pod %s is not running", container, podName)}
}

// PodSandbox finds the ready sandbox of a pod of this node, for
// port-forward. It implements server.Streams.
func (k *Kubelet) PodSandbox(ctx context.Context, namespace, podName string) (string, error) {
	pod, err := k.apiPod(namespace, podName)
	if err != nil {
		return "", err
	}
	rs, err := k.podRuntime(ctx, pod.UID)
	if err != nil {
		return "", err
	}
	if !rs.sandboxReady() {
		return "", &lookupError{http.StatusBadRequest, fmt.Sprintf("pod %s has no running sandbox", podName)}
	}
	return rs.Sandbox.Id, nil
}

// Exec runs a command in a container through the runtime. It implements
// server.Streams.
func (k *Kubelet) Exec(ctx context.Context, req runtime.ExecRequest) (int, error) {
	return k.rt.Exec(ctx, req)
}

// PortForward connects to a pod's port through the runtime. It
// implements server.Streams.
func (k *Kubelet) PortForward(ctx context.Context, sandboxID string, port int32, conn io.ReadWriteCloser) error {
	return k.rt.PortForward(ctx, sandboxID, port, conn)
}

var _ server.Streams = (*Kubelet)(nil)

// Attach connects to a container's own process through the runtime. It
// implements server.Streams.
func (k *Kubelet) Attach(ctx context.Context, req runtime.AttachRequest) error {
	return k.rt.Attach(ctx, req)
}
