package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// rotateLogs rotates the log of every running container that grew past
// ContainerLogMaxSize, as the kubelet's log manager does: the file is
// renamed with a timestamp, the runtime reopens the log path, and only
// the ContainerLogMaxFiles newest files are kept.
func (k *Kubelet) rotateLogs(ctx context.Context) {
	cs, err := k.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{labelManagedBy: managedByValue},
	}})
	if err != nil {
		return
	}
	for _, c := range cs.Containers {
		st, err := k.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil || st.Status == nil || st.Status.LogPath == "" {
			continue
		}
		path := st.Status.LogPath
		if !filepath.IsAbs(path) {
			path = filepath.Join(k.podLogDir(c.Labels[labelPodNamespace], c.Labels[labelPodName], types.UID(c.Labels[labelPodUID])), path)
		}
		if info, err := os.Stat(path); err != nil || info.Size() < k.cfg.ContainerLogMaxSize {
			continue
		}
		rotated := path + "." + time.Now().UTC().Format("20060102-150405.000000000")
		if err := os.Rename(path, rotated); err != nil {
			k.log.Warn("rotating a container log failed", "path", path, "err", err)
			continue
		}
		if _, err := k.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: c.Id}); err != nil {
			// Keep logging to the one file rather than lose lines.
			os.Rename(rotated, path)
			k.log.Warn("reopening a container log failed", "container", c.Id, "err", err)
			continue
		}
		pruneRotated(path, k.cfg.ContainerLogMaxFiles-1)
	}
}

// pruneRotated removes the rotated files of the log at path but the
// keep newest.
func pruneRotated(path string, keep int) {
	old, _ := filepath.Glob(path + ".*")
	sort.Strings(old) // timestamps sort in time order
	for len(old) > max(keep, 0) {
		os.Remove(old[0])
		old = old[1:]
	}
}
