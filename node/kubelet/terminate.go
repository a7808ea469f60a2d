package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"cairn/node/kubelet/logs"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// retryTerminate is how soon a failed termination is tried again.
const retryTerminate = time.Second

// terminate stops a pod being deleted (or gone from the API): preStop
// hooks, SIGTERM, SIGKILL after the grace period, then its sandbox. It
// stores the final status, removes the pod's containers, sandboxes,
// volumes and logs, and at last deletes the pod object with grace 0, as
// the kubelet does once nothing of the pod is left on the node.
func (k *Kubelet) terminate(ctx context.Context, w *podWorker, pod *corev1.Pod, gone bool) (bool, time.Duration) {
	rs, err := k.podRuntime(ctx, pod.UID)
	if err != nil {
		k.log.Warn("reading the runtime state of a terminating pod failed", "pod", podDesc(pod), "err", err)
		return false, retryTerminate
	}
	grace := max(gracePeriodOf(pod, nil), minGracePeriod)
	if err := k.killAll(ctx, pod, rs, grace); err != nil {
		k.event(pod, nil, corev1.EventTypeWarning, eventFailedKillPod, "error killing pod: %v", err)
		return false, retryTerminate
	}
	if err := k.stopSandboxes(ctx, rs); err != nil {
		k.log.Warn("stopping the sandbox of a terminating pod failed", "pod", podDesc(pod), "err", err)
		return false, retryTerminate
	}
	k.probes.RemovePod(pod.UID)
	if !gone {
		if fresh, err := k.podRuntime(ctx, pod.UID); err == nil {
			rs = fresh
		}
		p := plan{Initialized: true}
		for _, c := range pod.Spec.InitContainers {
			if rs.Views[c.Name].Latest == nil || rs.Views[c.Name].Latest.ExitCode != 0 {
				p.Initialized = false
			}
		}
		k.writePodStatus(ctx, w, pod, rs, p, nil, true)
	}
	if err := k.cleanupPod(ctx, pod.UID, pod.Namespace, pod.Name); err != nil {
		k.log.Warn("cleaning up a terminated pod failed", "pod", podDesc(pod), "err", err)
		return false, retryTerminate
	}
	if gone {
		return true, 0
	}
	err = k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		k.log.Warn("deleting the terminated pod failed", "pod", podDesc(pod), "err", err)
		return false, retryTerminate
	}
	k.log.Info("pod terminated", "pod", podDesc(pod))
	return true, 0
}

// stopPod stops what still runs of an ended pod; its containers and
// logs stay.
func (k *Kubelet) stopPod(ctx context.Context, pod *corev1.Pod) error {
	rs, err := k.podRuntime(ctx, pod.UID)
	if err != nil {
		return err
	}
	k.probes.RemovePod(pod.UID)
	if err := k.killAll(ctx, pod, rs, gracePeriodOf(pod, nil)); err != nil {
		return err
	}
	return k.stopSandboxes(ctx, rs)
}

// killAll stops the pod's running instances, the regular containers
// (in parallel) before the sidecars, which serve them until the end.
func (k *Kubelet) killAll(ctx context.Context, pod *corev1.Pod, rs *podRuntime, grace int64) error {
	var regular, sidecars []*instance
	for _, i := range rs.running() {
		if c := findContainer(pod, rs.containerName(i.ID)); c != nil && isSidecar(c) {
			sidecars = append(sidecars, i)
		} else {
			regular = append(regular, i)
		}
	}
	podIP := first(k.podIPs(pod, rs))
	kill := func(list []*instance) error {
		var wg sync.WaitGroup
		errs := make([]error, len(list))
		for n, i := range list {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[n] = k.killContainer(ctx, pod, findContainer(pod, rs.containerName(i.ID)), i.ID, podIP, grace, "", true)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := kill(regular); err != nil {
		return err
	}
	return kill(sidecars)
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return ephemeralContainer(pod, i)
		}
	}
	return nil
}

func (k *Kubelet) stopSandboxes(ctx context.Context, rs *podRuntime) error {
	for _, sb := range rs.Sandboxes {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if _, err := k.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("kubelet: stopping sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}

// removeInstance removes a container instance and its log.
func (k *Kubelet) removeInstance(ctx context.Context, rs *podRuntime, id string) {
	var logPath string
	for _, list := range rs.Instances {
		for _, i := range list {
			if i.ID == id {
				logPath = i.LogPath
			}
		}
	}
	if _, err := k.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		k.log.Warn("removing a container failed", "container", id, "err", err)
		return
	}
	if logPath != "" {
		os.Remove(logPath)
		pruneRotated(logPath, 0)
	}
}

// gcInstances removes the exited instances of each container but the
// two newest: the current one and the last one, whose log
// `kubectl logs --previous` shows.
func (k *Kubelet) gcInstances(ctx context.Context, rs *podRuntime) {
	for _, list := range rs.Instances {
		for n, i := range list {
			if n >= 2 && i.State != stateRunning {
				k.removeInstance(ctx, rs, i.ID)
			}
		}
	}
}

// cleanupPod removes everything of a pod from the node: containers,
// sandboxes, volumes, logs and backoff state.
func (k *Kubelet) cleanupPod(ctx context.Context, uid types.UID, namespace, name string) error {
	cs, err := k.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: podUIDLabel(uid)}})
	if err != nil {
		return err
	}
	for _, c := range cs.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			// The pod may be gone: its grace period is on the container.
			grace := int64(minGracePeriod)
			if g, err := strconv.ParseInt(c.Annotations[annotationGracePeriod], 10, 64); err == nil && g > grace {
				grace = g
			}
			if _, err := k.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.Id, Timeout: grace}); err != nil {
				return err
			}
		}
		if _, err := k.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.Id}); err != nil {
			return err
		}
	}
	sbs, err := k.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: podUIDLabel(uid)}})
	if err != nil {
		return err
	}
	for _, sb := range sbs.Items {
		if namespace == "" {
			namespace, name = sb.Metadata.GetNamespace(), sb.Metadata.GetName()
		}
		if _, err := k.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return err
		}
		if _, err := k.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return err
		}
	}
	if err := k.volumes.TearDown(uid); err != nil {
		return err
	}
	if namespace != "" {
		if err := os.RemoveAll(k.podLogDir(namespace, name, uid)); err != nil {
			return err
		}
	}
	k.crashBackoff.Forget(string(uid) + "/")
	k.pullBackoff.Forget(string(uid) + "/")
	return nil
}

// readTail reads at most the last n bytes of a file.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// lastLogLines is the end of a container's log, for a termination
// message that falls back to the log: its last lines, at most maxBytes.
func lastLogLines(path string, lines, maxBytes int64) string {
	var b bytes.Buffer
	if err := logs.Read(context.Background(), path, logs.Options{TailLines: &lines}, &b, nil); err != nil {
		return ""
	}
	out := b.Bytes()
	if int64(len(out)) > maxBytes {
		out = out[int64(len(out))-maxBytes:]
	}
	return string(out)
}
