package kubelet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxNodeImages bounds status.images, as the kubelet's default.
const maxNodeImages = 50

// nodeObservation is what the node status is computed from.
type nodeObservation struct {
	Now                 time.Time
	Host                hostInfo
	MemAvailable        int64
	DiskTotal, DiskFree int64
	Procs, PIDMax       int64
	// RuntimeProblems are the runtime's unmet conditions; none means
	// it is ready.
	RuntimeProblems []string
	Images          []corev1.ContainerImage
}

// observe reads the host and asks the runtime how it is.
func (k *Kubelet) observe(ctx context.Context) nodeObservation {
	o := nodeObservation{Now: time.Now(), Host: readHostInfo()}
	if m, err := readMeminfo(); err == nil {
		o.MemAvailable = m["MemAvailable"]
	}
	if total, free, err := diskUsage(k.cfg.RootDir); err == nil {
		o.DiskTotal, o.DiskFree = total, free
	}
	if procs, limit, err := pidUsage(); err == nil {
		o.Procs, o.PIDMax = procs, limit
	}
	st, err := k.rt.Status(ctx, &runtimeapi.StatusRequest{})
	switch {
	case err != nil:
		o.RuntimeProblems = []string{fmt.Sprintf("container runtime is down: %v", err)}
	case st.Status != nil:
		for _, c := range st.Status.Conditions {
			if !c.Status {
				o.RuntimeProblems = append(o.RuntimeProblems, fmt.Sprintf("container runtime not ready: %s=false reason:%s message:%s", c.Type, c.Reason, c.Message))
			}
		}
	}
	if imgs, err := k.rt.ListImages(ctx, &runtimeapi.ListImagesRequest{}); err == nil {
		for _, img := range imgs.Images {
			names := append(append([]string(nil), img.RepoDigests...), img.RepoTags...)
			if len(names) == 0 {
				continue
			}
			o.Images = append(o.Images, corev1.ContainerImage{Names: names, SizeBytes: int64(img.Size)})
		}
		sort.SliceStable(o.Images, func(i, j int) bool { return o.Images[i].SizeBytes > o.Images[j].SizeBytes })
		if len(o.Images) > maxNodeImages {
			o.Images = o.Images[:maxNodeImages]
		}
	}
	return o
}

// nodeStatus computes the node's status from an observation, keeping
// the transition times of unchanged conditions from old.
func (k *Kubelet) nodeStatus(o nodeObservation, old corev1.NodeStatus) corev1.NodeStatus {
	cpu := *resource.NewQuantity(int64(o.Host.CPUs), resource.DecimalSI)
	if k.cfg.CPU != nil {
		cpu = k.cfg.CPU.DeepCopy()
	}
	mem := *resource.NewQuantity(o.Host.MemoryTotal, resource.BinarySI)
	if k.cfg.Memory != nil {
		mem = k.cfg.Memory.DeepCopy()
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              cpu,
		corev1.ResourceMemory:           mem,
		corev1.ResourcePods:             *resource.NewQuantity(int64(k.cfg.MaxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(o.DiskTotal, resource.BinarySI),
	}
	// Allocatable leaves out what the eviction thresholds keep free, as
	// the kubelet's does.
	allocatable := capacity.DeepCopy()
	if m := mem.Value() - k.cfg.EvictionMemoryAvailable; m > 0 {
		allocatable[corev1.ResourceMemory] = *resource.NewQuantity(m, resource.BinarySI)
	}
	allocatable[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(float64(o.DiskTotal)*(1-k.cfg.EvictionDiskFreeFraction)), resource.BinarySI)
	s := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: allocatable,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.cfg.NodeIP.String()},
			{Type: corev1.NodeHostName, Address: k.cfg.Hostname},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(k.cfg.KubeletPort)}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: o.Host.MachineID, SystemUUID: o.Host.SystemUUID, BootID: o.Host.BootID,
			KernelVersion: o.Host.KernelVersion, OSImage: o.Host.OSImage,
			ContainerRuntimeVersion: k.runtimeName + "://" + k.runtimeVersion,
			KubeletVersion:          Version,
			OperatingSystem:         o.Host.OperatingSystem, Architecture: o.Host.Arch,
		},
		Images: o.Images,
	}
	memPressure := o.MemAvailable > 0 && o.MemAvailable < k.cfg.EvictionMemoryAvailable
	diskPressure := o.DiskTotal > 0 && float64(o.DiskFree) < k.cfg.EvictionDiskFreeFraction*float64(o.DiskTotal)
	pidPressure := o.PIDMax > 0 && float64(o.PIDMax-o.Procs) < k.cfg.EvictionPIDFreeFraction*float64(o.PIDMax)
	readyMsg := "kubelet is posting ready status"
	if len(o.RuntimeProblems) > 0 {
		readyMsg = strings.Join(o.RuntimeProblems, ", ")
	}
	byType := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range old.Conditions {
		byType[c.Type] = c
	}
	cond := func(t corev1.NodeConditionType, status bool, trueReason, trueMsg, falseReason, falseMsg string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: falseReason, Message: falseMsg,
			LastHeartbeatTime: metav1.NewTime(o.Now.Truncate(time.Second)), LastTransitionTime: metav1.NewTime(o.Now.Truncate(time.Second))}
		if status {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, trueReason, trueMsg
		}
		if prev, ok := byType[t]; ok && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
		return c
	}
	s.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, memPressure, "KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
			"KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, diskPressure, "KubeletHasDiskPressure", k.diskPressureMessage(o),
			"KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, pidPressure, "KubeletHasInsufficientPID", "kubelet has insufficient PID available",
			"KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, len(o.RuntimeProblems) == 0, "KubeletReady", readyMsg, "KubeletNotReady", readyMsg),
	}
	// Conditions others set (e.g. NetworkUnavailable) stay.
	for _, c := range old.Conditions {
		switch c.Type {
		case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady:
		default:
			s.Conditions = append(s.Conditions, c)
		}
	}
	return s
}

// nodeStatusChanged compares statuses leaving out heartbeat times.
func nodeStatusChanged(a, b corev1.NodeStatus) bool {
	strip := func(s corev1.NodeStatus) corev1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return !apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// writeNodeStatus stores node's fresh status when it changed, or always
// when force (a heartbeat). It returns the node as stored.
func (k *Kubelet) writeNodeStatus(ctx context.Context, node *corev1.Node, force bool) (*corev1.Node, error) {
	o := k.observe(ctx)
	for attempt := 0; ; attempt++ {
		status := k.nodeStatus(o, node.Status)
		if !force && !nodeStatusChanged(node.Status, status) {
			return node, nil
		}
		wasReady := nodeReady(node.Status)
		next := node.DeepCopy()
		next.Status = status
		out, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			k.logPressure(node.Status, status)
			if ready := nodeReady(status); ready != wasReady {
				reason, msg := eventNodeReady, "Node %s status is now: NodeReady"
				if !ready {
					reason, msg = eventNodeNotReady, "Node %s status is now: NodeNotReady"
				}
				k.recorder.Eventf(k.nodeRef(), corev1.EventTypeNormal, reason, msg, k.cfg.NodeName)
			}
			return out, nil
		}
		if !apierrors.IsConflict(err) || attempt == 3 {
			return nil, fmt.Errorf("kubelet: updating the status of node %s: %w", k.cfg.NodeName, err)
		}
		if node, err = k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("kubelet: updating the status of node %s: %w", k.cfg.NodeName, err)
		}
	}
}

// diskPressureMessage says why the node has disk pressure and what it
// means: a full disk is the commonest reason a small cluster schedules
// nothing.
func (k *Kubelet) diskPressureMessage(o nodeObservation) string {
	return fmt.Sprintf("kubelet has disk pressure: the filesystem of %s has %.1f%% free, under the %.0f%% of --eviction-disk-free; new pods are not scheduled on this node until space is freed",
		k.cfg.RootDir, 100*float64(o.DiskFree)/float64(max(o.DiskTotal, 1)), 100*k.cfg.EvictionDiskFreeFraction)
}

// logPressure logs the pressure conditions that old lacked and status
// has: the node is tainted for them, and pods stop landing on it.
func (k *Kubelet) logPressure(old, status corev1.NodeStatus) {
	for _, c := range status.Conditions {
		switch c.Type {
		case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure:
		default:
			continue
		}
		if c.Status == corev1.ConditionTrue && conditionStatus(old, c.Type) != corev1.ConditionTrue {
			k.log.Warn("node under pressure", "condition", c.Type, "message", c.Message)
		}
	}
}

func conditionStatus(s corev1.NodeStatus, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func nodeReady(s corev1.NodeStatus) bool {
	return conditionStatus(s, corev1.NodeReady) == corev1.ConditionTrue
}

func (k *Kubelet) kickNodeStatus() { signal(k.nodeStatusKick) }

// nodeStatusLoop looks at the node every NodeStatusUpdateFrequency and
// writes its status when it changed, or when NodeStatusReportFrequency
// passed since the last write. A kick (the podCIDR arrived) looks at
// once.
func (k *Kubelet) nodeStatusLoop(ctx context.Context) {
	ticker := time.NewTicker(k.cfg.NodeStatusUpdateFrequency)
	defer ticker.Stop()
	lastWrite := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-k.nodeStatusKick:
		}
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{ResourceVersion: "0"})
		if apierrors.IsNotFound(err) {
			// Someone deleted the Node: register it again.
			if err := k.register(ctx); err != nil {
				k.log.Warn("registering the node again failed", "err", err)
			}
			continue
		}
		if err != nil {
			k.log.Warn("reading the node failed", "err", err)
			continue
		}
		force := time.Since(lastWrite) >= k.cfg.NodeStatusReportFrequency
		out, err := k.writeNodeStatus(ctx, node, force)
		if err != nil {
			k.log.Warn("writing the node status failed", "err", err)
			continue
		}
		if out.ResourceVersion != node.ResourceVersion {
			lastWrite = time.Now()
		}
	}
}
