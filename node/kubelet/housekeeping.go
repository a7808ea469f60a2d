package kubelet

import (
	"context"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// housekeepingLoop cleans up, every HousekeepingInterval, what pods
// deleted while the agent was down left behind: sandboxes, containers,
// pod directories and logs of pods the API no longer has. It also makes
// sure every pod of the node has a worker, and rotates large logs.
func (k *Kubelet) housekeepingLoop(ctx context.Context) {
	for {
		k.housekeeping(ctx)
		k.rotateLogs(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(k.cfg.HousekeepingInterval):
		}
	}
}

func (k *Kubelet) housekeeping(ctx context.Context) {
	pods, err := k.podLister.List(labels.Everything())
	if err != nil {
		return
	}
	known := map[types.UID]bool{}
	for _, p := range pods {
		known[p.UID] = true
		if !k.workers.has(p.UID) && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			k.workers.update(p)
		}
	}
	orphan := func(uid types.UID) bool { return !known[uid] && !k.workers.has(uid) }
	sbs, err := k.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelManagedBy: managedByValue}},
	})
	if err != nil {
		k.log.Warn("housekeeping: listing sandboxes failed", "err", err)
		return
	}
	for _, sb := range sbs.Items {
		uid := types.UID(sb.Labels[labelPodUID])
		if uid == "" || !orphan(uid) {
			continue
		}
		k.log.Info("removing the sandbox of a pod that is gone", "pod", sb.Metadata.GetNamespace()+"/"+sb.Metadata.GetName(), "uid", uid)
		if err := k.cleanupPod(ctx, uid, sb.Metadata.GetNamespace(), sb.Metadata.GetName()); err != nil {
			k.log.Warn("housekeeping: cleaning up a pod failed", "uid", uid, "err", err)
		}
	}
	// Directories of pods with no sandbox left.
	uids, err := k.volumes.PodUIDs()
	if err == nil {
		for _, uid := range uids {
			if orphan(uid) {
				if err := k.volumes.TearDown(uid); err != nil {
					k.log.Warn("housekeeping: removing a pod directory failed", "uid", uid, "err", err)
				}
			}
		}
	}
	entries, err := os.ReadDir(k.cfg.PodLogsDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		i := strings.LastIndexByte(e.Name(), '_')
		if i < 0 || !orphan(types.UID(e.Name()[i+1:])) {
			continue
		}
		os.RemoveAll(k.cfg.PodLogsDir + "/" + e.Name())
	}
}
