package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/testimage"
	"cairn/internal/topdir"
	"cairn/node/kubelet"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestNode runs one agent against a real control plane and the embedded
// runtime, and checks what users see of their pods through the API.
func TestNode(t *testing.T) {
	n := newTestNode(t)
	ctx := context.Background()

	t.Run("the node registers with its capacity, labels, taints and lease", func(t *testing.T) {
		node := n.waitNode(t, nodeReady)
		for k, v := range map[string]string{"kubernetes.io/hostname": n.cfg.NodeName, "kubernetes.io/os": "linux", "example.com/pool": "test"} {
			if node.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
			}
		}
		if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "example.com/test" {
			t.Errorf("taints %v", node.Spec.Taints)
		}
		if node.Status.Capacity.Pods().Value() != 110 || node.Status.Capacity.Cpu().IsZero() || node.Status.Allocatable.Memory().IsZero() ||
			node.Status.Capacity.StorageEphemeral().IsZero() {
			t.Errorf("capacity %v", node.Status.Capacity)
		}
		if node.Status.DaemonEndpoints.KubeletEndpoint.Port != int32(n.cfg.KubeletPort) {
			t.Errorf("kubelet port %d", node.Status.DaemonEndpoints.KubeletEndpoint.Port)
		}
		info := node.Status.NodeInfo
		if info.KubeletVersion != kubelet.Version || !strings.Contains(info.ContainerRuntimeVersion, "://") || info.KernelVersion == "" {
			t.Errorf("node info %+v", info)
		}
		var ip string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		if ip != "127.0.0.1" {
			t.Errorf("addresses %v", node.Status.Addresses)
		}
		lease, err := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *lease.Spec.HolderIdentity != n.cfg.NodeName || *lease.Spec.LeaseDurationSeconds != 40 ||
			len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != node.UID {
			t.Errorf("lease %+v", lease)
		}
		renewed := lease.Spec.RenewTime.Time
		eventually(t, 10*time.Second, "lease renewed", func() bool {
			l, err := n.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
			return err == nil && l.Spec.RenewTime.After(renewed)
		}, func() any { return nil })
	})

	t.Run("the kubelet's per-pod directories are spread over the disk", func(t *testing.T) {
		var st unix.Statfs_t
		if err := unix.Statfs(n.cfg.DataDir, &st); err != nil {
			t.Fatal(err)
		}
		if st.Type != unix.EXT4_SUPER_MAGIC {
			t.Skipf("the data directory is not on ext4 (magic %#x)", st.Type)
		}
		for _, d := range []string{filepath.Join("kubelet", "pods"), "pod-logs"} {
			if marked, err := topdir.Marked(filepath.Join(n.cfg.DataDir, d)); err != nil || !marked {
				t.Errorf("%s: top directory flag %v, err %v", d, marked, err)
			}
		}
	})

	t.Run("a pod runs its init containers, env and volumes, and logs through the API", func(t *testing.T) {
		_, err := n.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"GREETING": "hello", "file.txt": "v1"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = n.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("s3cret")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := n.pod("web", corev1.Container{
			Name: "app",
			Command: sh(`echo "$(GREETING) from $POD_NAME on $NODE"; cat /work/init; echo; cat /creds/password; echo;
				while true; do echo "cfg=$(cat /cfg/file.txt)"; sleep 0.3; done`),
			Env: []corev1.EnvVar{
				{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "GREETING"}}},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}, {Name: "cfg", MountPath: "/cfg"}, {Name: "creds", MountPath: "/creds"}},
		})
		p.Spec.InitContainers = []corev1.Container{{
			Name: "prepare", Image: testimage.BusyboxRef, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: sh("echo initialized > /work/init"), VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}},
		}}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		}
		n.create(t, p)
		got := n.waitPod(t, "web", 30*time.Second, "ready", podReady)
		if got.Status.PodIP == "" || !strings.HasPrefix(got.Status.PodIP, "10.98.1.") || got.Status.HostIP != "127.0.0.1" || got.Status.StartTime == nil {
			t.Errorf("addresses %q %q", got.Status.PodIP, got.Status.HostIP)
		}
		init := got.Status.InitContainerStatuses[0]
		if init.State.Terminated == nil || init.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %+v", init.State)
		}
		cs := got.Status.ContainerStatuses[0]
		if !strings.Contains(cs.ContainerID, "://") || cs.ImageID == "" || !cs.Ready || !*cs.Started {
			t.Errorf("container status %+v", cs)
		}
		// Nothing changes: the status is not written again.
		time.Sleep(1500 * time.Millisecond)
		if again, _ := n.client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); again.ResourceVersion != got.ResourceVersion {
			t.Errorf("the status of a steady pod was written again: %+v\nthen %+v", got.Status, again.Status)
		}
		var logs string
		eventually(t, 10*time.Second, "logs", func() bool {
			logs, _ = n.logs("web", &corev1.PodLogOptions{})
			return strings.Contains(logs, "cfg=v1")
		}, func() any { return logs })
		for _, want := range []string{"hello from web on " + n.cfg.NodeName, "initialized", "s3cret"} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs %q lack %q", logs, want)
			}
		}
		tail, err := n.logs("web", &corev1.PodLogOptions{TailLines: ptr.To[int64](1), Timestamps: true})
		if err != nil || strings.Count(tail, "\n") != 1 || !strings.Contains(tail, "Z cfg=") {
			t.Errorf("tail 1 with timestamps: %q, %v", tail, err)
		}
		// kubectl logs -f: lines keep coming through the API server.
		stream, err := n.client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{Follow: true, TailLines: ptr.To[int64](0)}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		lines := make(chan string, 64)
		go func() {
			sc := bufio.NewScanner(stream)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Updating the config map shows in the volume, in the followed log.
		cm, _ := n.client.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{})
		cm.Data["file.txt"] = "v2"
		if _, err := n.client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(20 * time.Second)
		for seen := false; !seen; {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the followed log ended")
				}
				seen = l == "cfg=v2"
			case <-timeout:
				t.Fatal("no cfg=v2 in the followed log within 20s")
			}
		}
	})

	t.Run("downwardAPI, projected and memory volumes", func(t *testing.T) {
		p := n.pod("vols", corev1.Container{Name: "app",
			Command:      sh("cat /info/labels; echo; cat /proj/name; echo; cat /proj/settings/GREETING; echo; grep ' /mem ' /proc/mounts; sleep 3600"),
			VolumeMounts: []corev1.VolumeMount{{Name: "info", MountPath: "/info"}, {Name: "proj", MountPath: "/proj"}, {Name: "mem", MountPath: "/mem"}}})
		p.Spec.Volumes = []corev1.Volume{
			{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
			{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
					Items: []corev1.KeyToPath{{Key: "GREETING", Path: "settings/GREETING"}}}},
			}}}},
			{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("8Mi"))}}},
		}
		n.create(t, p)
		n.waitPod(t, "vols", 30*time.Second, "running", running)
		var logs string
		eventually(t, 10*time.Second, "volume contents in the log", func() bool {
			logs, _ = n.logs("vols", &corev1.PodLogOptions{})
			return strings.Contains(logs, "tmpfs")
		}, func() any { return logs })
		for _, want := range []string{`app="vols"`, "\nvols\n", "hello\n", "size=8192k"} {
			if !strings.Contains(logs, want) {
				t.Errorf("log %q lacks %q", logs, want)
			}
		}
		n.delete(t, "vols", 0)
	})

	t.Run("a pod filling its emptyDir over the size limit is evicted", func(t *testing.T) {
		p := n.pod("filler", corev1.Container{Name: "app", Command: sh("head -c 3000000 /dev/zero > /scratch/fill; sleep 3600"),
			VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}})
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}}
		n.create(t, p)
		got := n.waitPod(t, "filler", 30*time.Second, "evicted", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if got.Status.Reason != "Evicted" || !strings.Contains(got.Status.Message, `EmptyDir volume "scratch" exceeds the limit "1Mi"`) {
			t.Errorf("status reason %q message %q", got.Status.Reason, got.Status.Message)
		}
		n.delete(t, "filler", 0)
	})

	t.Run("missing images wait with ErrImagePull, ImagePullBackOff and ErrImageNeverPull", func(t *testing.T) {
		// Each status is seen in a watch, however briefly it lasts.
		w, err := n.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=nopull"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		n.create(t, n.pod("nopull", corev1.Container{Name: "app", Image: "cairn.invalid/nothing:1"}))
		seen := map[string]bool{}
		timeout := time.After(30 * time.Second)
		for !seen["ErrImagePull"] || !seen["ImagePullBackOff"] {
			select {
			case ev := <-w.ResultChan():
				if p, ok := ev.Object.(*corev1.Pod); ok && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil {
					seen[p.Status.ContainerStatuses[0].State.Waiting.Reason] = true
				}
			case <-timeout:
				t.Fatalf("waiting reasons seen: %v, want ErrImagePull and ImagePullBackOff", seen)
			}
		}
		never := n.pod("neverpull", corev1.Container{Name: "app", Image: "cairn.invalid/nothing:1"})
		never.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		n.create(t, never)
		got := n.waitPod(t, "neverpull", 30*time.Second, "refusing to pull", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "ErrImageNeverPull"
		})
		if got.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s", got.Status.Phase)
		}
		n.delete(t, "nopull", 0)
		n.delete(t, "neverpull", 0)
	})

	t.Run("routes to peer nodes follow their podCIDRs", func(t *testing.T) {
		// A peer on the pod bridge's subnet, so its address is a valid
		// gateway inside the test's network namespace.
		peer, err := n.client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "peer-" + n.cfg.NodeName},
			Spec:       corev1.NodeSpec{PodCIDR: "10.98.2.0/24", PodCIDRs: []string{"10.98.2.0/24"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		peer.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.98.1.200"}}
		if _, err := n.client.CoreV1().Nodes().UpdateStatus(ctx, peer, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		routes := func() string {
			out, _ := exec.Command("nsenter", "--net="+n.netns, "ip", "route", "show").CombinedOutput()
			return string(out)
		}
		eventually(t, 10*time.Second, "route to the peer", func() bool {
			return strings.Contains(routes(), "10.98.2.0/24 via 10.98.1.200")
		}, func() any { return routes() })
		if err := n.client.CoreV1().Nodes().Delete(ctx, peer.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "route removed", func() bool {
			return !strings.Contains(routes(), "10.98.2.0/24")
		}, func() any { return routes() })
	})

	t.Run("a crashing container restarts with backoff", func(t *testing.T) {
		n.create(t, n.pod("crash", corev1.Container{Name: "app", Command: sh("echo crashing; exit 3")}))
		sawBackoff := false
		got := n.waitPod(t, "crash", 30*time.Second, "restarted twice", func(p *corev1.Pod) bool {
			if len(p.Status.ContainerStatuses) == 0 {
				return false
			}
			cs := p.Status.ContainerStatuses[0]
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
				sawBackoff = true
			}
			return cs.RestartCount >= 2 && sawBackoff
		})
		cs := got.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		if last == nil || last.ExitCode != 3 || last.Reason != "Error" {
			t.Errorf("last state %+v", cs.LastTerminationState)
		}
		if got.Status.Phase != corev1.PodRunning {
			t.Errorf("phase %s, want Running while it restarts", got.Status.Phase)
		}
		prev, err := n.logs("crash", &corev1.PodLogOptions{Previous: true})
		if err != nil || prev != "crashing\n" {
			t.Errorf("previous log %q, %v", prev, err)
		}
		events, err := n.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=crash"})
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]bool{}
		for _, e := range events.Items {
			reasons[e.Reason] = true
			if e.Source.Component != "kubelet" || e.Source.Host != n.cfg.NodeName {
				t.Errorf("event source %+v", e.Source)
			}
		}
		for _, r := range []string{"Pulled", "Created", "Started", "BackOff"} {
			if !reasons[r] {
				t.Errorf("no %s event among %v", r, reasons)
			}
		}
		n.delete(t, "crash", 0)
	})

	t.Run("a container failing its liveness probe is killed and restarted", func(t *testing.T) {
		c := corev1.Container{Name: "app", Command: sh("touch /tmp/alive; sleep 2; rm /tmp/alive; sleep 3600"),
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/alive"}}},
				PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1}}
		n.create(t, n.pod("liveness", c))
		got := n.waitPod(t, "liveness", 30*time.Second, "restarted", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount >= 1
		})
		if last := got.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode == 0 {
			t.Errorf("last state %+v", got.Status.ContainerStatuses[0].LastTerminationState)
		}
		n.delete(t, "liveness", 0)
	})

	t.Run("a failing readiness probe makes the pod unready", func(t *testing.T) {
		c := corev1.Container{Name: "web", Image: testimage.HTTPServerRef,
			Command: sh("touch /tmp/ready; testhttp serve -listen :8080 & sleep 6; rm /tmp/ready; wait"),
			Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			// Generous timeouts: a loaded machine must not fail them.
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
				PeriodSeconds: 1, TimeoutSeconds: 3, FailureThreshold: 1, SuccessThreshold: 1},
			// An HTTP probe from the agent into the pod, by port name.
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
				PeriodSeconds: 1, TimeoutSeconds: 3, FailureThreshold: 3, SuccessThreshold: 1},
		}
		n.create(t, n.pod("readiness", c))
		n.waitPod(t, "readiness", 30*time.Second, "ready", podReady)
		got := n.waitPod(t, "readiness", 30*time.Second, "unready", func(p *corev1.Pod) bool { return !podReady(p) })
		cs := got.Status.ContainerStatuses[0]
		if cs.Ready || cs.State.Running == nil || cs.RestartCount != 0 {
			t.Errorf("container %+v", cs)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.ContainersReady && (c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady") {
				t.Errorf("ContainersReady %+v", c)
			}
		}
		n.delete(t, "readiness", 0)
	})

	t.Run("a container over its memory limit is OOMKilled", func(t *testing.T) {
		c := corev1.Container{Name: "hog", Command: sh("head -c 200m /dev/zero | tail"),
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}}}
		p := n.pod("hog", c)
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		n.create(t, p)
		got := n.waitPod(t, "hog", 30*time.Second, "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		term := got.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.Reason != "OOMKilled" {
			t.Errorf("terminated %+v", term)
		}
		n.delete(t, "hog", 0)
	})

	t.Run("safe sysctls apply in the pod's namespaces; an unsafe one rejects the pod", func(t *testing.T) {
		p := n.pod("tuned", corev1.Container{Name: "app", Command: sh(
			`echo "rmid=$(cat /proc/sys/kernel/shm_rmid_forced) ports=$(cat /proc/sys/net/ipv4/ip_local_port_range | tr '\t' ' ')"; sleep 3600`)})
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
			{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "net.ipv4.ip_local_port_range", Value: "40000 41000"}}}
		n.create(t, p)
		n.waitPod(t, "tuned", 30*time.Second, "running", running)
		var logs string
		eventually(t, 10*time.Second, "the sysctls in the pod", func() bool {
			logs, _ = n.logs("tuned", &corev1.PodLogOptions{})
			return strings.Contains(logs, "rmid=1 ports=40000 41000")
		}, func() any { return logs })
		n.delete(t, "tuned", 0)

		p = n.pod("untuned", corev1.Container{Name: "app", Command: []string{"sleep", "3600"}})
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
		n.create(t, p)
		got := n.waitPod(t, "untuned", 30*time.Second, "rejected", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if got.Status.Reason != "SysctlForbidden" || !strings.Contains(got.Status.Message, `"kernel.msgmax" not allowlisted`) || len(got.Status.ContainerStatuses) != 0 {
			t.Errorf("status %+v, want the pod rejected with SysctlForbidden before any container ran", got.Status)
		}
		n.delete(t, "untuned", 0)
	})

	t.Run("a pod bound past the node's resources or selector is rejected, not run", func(t *testing.T) {
		big := n.pod("toobig", corev1.Container{Name: "app", Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000")}}})
		elsewhere := n.pod("elsewhere", corev1.Container{Name: "app", Command: []string{"sleep", "3600"}})
		elsewhere.Spec.NodeSelector = map[string]string{"example.com/pool": "other"}
		for _, c := range []struct {
			pod    *corev1.Pod
			reason string
		}{{big, "OutOfcpu"}, {elsewhere, "NodeAffinity"}} {
			n.create(t, c.pod)
			got := n.waitPod(t, c.pod.Name, 30*time.Second, "rejected", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
			if got.Status.Reason != c.reason || !strings.HasPrefix(got.Status.Message, "Pod was rejected: ") || len(got.Status.ContainerStatuses) != 0 {
				t.Errorf("%s: status %+v, want it rejected with %s before any container ran", c.pod.Name, got.Status, c.reason)
			}
			n.delete(t, c.pod.Name, 0)
		}
	})

	t.Run("a chatty container's log is rotated and still followed", func(t *testing.T) {
		created := n.create(t, n.pod("chatty", corev1.Container{Name: "app",
			Command: sh(`i=0; while true; do seq 1 300 | sed "s/^/burst $i line /"; i=$((i+1)); sleep 0.2; done`)}))
		n.waitPod(t, "chatty", 30*time.Second, "running", running)
		stream, err := n.client.CoreV1().Pods("default").GetLogs("chatty", &corev1.PodLogOptions{Follow: true, TailLines: ptr.To[int64](1)}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		logDir := filepath.Join(n.cfg.DataDir, "pod-logs", "default_chatty_"+string(created.UID), "app")
		rotations := 0
		eventually(t, 20*time.Second, "two rotations", func() bool {
			files, _ := filepath.Glob(filepath.Join(logDir, "0.log.*"))
			if len(files) > 2 {
				t.Fatalf("%d rotated files kept, want at most 2: %v", len(files), files)
			}
			rotations = max(rotations, len(files))
			return rotations == 2
		}, func() any { return rotations })
		// The followed stream went on across the rotations.
		sc := bufio.NewScanner(stream)
		var last string
		deadline := time.Now().Add(10 * time.Second)
		for sc.Scan() && time.Now().Before(deadline) {
			last = sc.Text()
			if strings.HasPrefix(last, "burst ") && !strings.HasPrefix(last, "burst 0 ") && !strings.HasPrefix(last, "burst 1 ") {
				break
			}
		}
		if !strings.HasPrefix(last, "burst ") {
			t.Errorf("followed log stopped at %q", last)
		}
		stream.Close()
		n.delete(t, "chatty", 0)
	})

	t.Run("a new image restarts the container; a pod past its deadline fails", func(t *testing.T) {
		p := n.pod("swap", corev1.Container{Name: "app", Command: sh("sleep 3600")})
		p.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
		n.create(t, p)
		first := n.waitPod(t, "swap", 30*time.Second, "running", running).Status.ContainerStatuses[0]
		// A patch: the kubelet may be writing the pod's status meanwhile.
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"app","image":%q}]}}`, testimage.HTTPServerRef)
		if _, err := n.client.CoreV1().Pods("default").Patch(ctx, "swap", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		swapped := n.waitPod(t, "swap", 30*time.Second, "on the new image", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses[0]
			return cs.ContainerID != first.ContainerID && cs.State.Running != nil
		}).Status.ContainerStatuses[0]
		if swapped.RestartCount != 1 || swapped.Image != testimage.HTTPServerRef || swapped.ImageID == first.ImageID {
			t.Errorf("after the image change: %+v", swapped)
		}
		failed := n.waitPod(t, "swap", 20*time.Second, "past its deadline", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if failed.Status.Reason != "DeadlineExceeded" || failed.Status.ContainerStatuses[0].State.Terminated == nil {
			t.Errorf("status %+v", failed.Status)
		}
		n.delete(t, "swap", 0)
	})

	t.Run("exec and port-forward reach a pod through the API", func(t *testing.T) {
		checkStreams(t, n, true)
	})

	t.Run("attach reaches a pod's shell through the API", func(t *testing.T) {
		checkAttach(t, n)
	})

	t.Run("kubectl debug runs an ephemeral container in its target's processes", func(t *testing.T) {
		checkDebug(t, n)
	})

	t.Run("deleting a pod runs preStop, stops it and removes it", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "marker")
		c := corev1.Container{Name: "app", Command: sh("trap 'echo term >> /host/marker; exit 0' TERM; while true; do sleep 0.1; done"),
			Lifecycle:    &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: sh("echo prestop >> /host/marker")}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}}
		p := n.pod("graceful", c)
		p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Dir(marker)}}}}
		created := n.create(t, p)
		n.waitPod(t, "graceful", 30*time.Second, "running", running)
		n.delete(t, "graceful", 5)
		n.waitGone(t, "graceful", 30*time.Second)
		b, _ := os.ReadFile(marker)
		if string(b) != "prestop\nterm\n" {
			t.Errorf("marker %q, want prestop then term", b)
		}
		if _, err := os.Stat(filepath.Join(n.cfg.DataDir, "kubelet", "pods", string(created.UID))); !os.IsNotExist(err) {
			t.Errorf("pod directory left: %v", err)
		}
	})

	t.Run("a restarted agent adopts running pods and cleans up deleted ones", func(t *testing.T) {
		before := n.waitPod(t, "web", 10*time.Second, "ready", podReady)
		orphan := n.create(t, n.pod("orphan", corev1.Container{Name: "app", Command: sh("sleep 3600")}))
		n.waitPod(t, "orphan", 30*time.Second, "running", running)
		n.halt(t)
		// Deleted while the agent is down: nothing stops it but cleanup.
		if err := n.client.CoreV1().Pods("default").Delete(ctx, "orphan", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		n.start()
		podDir := filepath.Join(n.cfg.DataDir, "kubelet", "pods", string(orphan.UID))
		eventually(t, 30*time.Second, "orphan cleaned up", func() bool {
			_, err := os.Stat(podDir)
			return os.IsNotExist(err)
		}, func() any { return podDir })
		after := n.waitPod(t, "web", 10*time.Second, "ready", podReady)
		b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
		if a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount || !a.State.Running.StartedAt.Equal(&b.State.Running.StartedAt) {
			t.Errorf("container changed across the agent restart: before %+v, after %+v", b, a)
		}
		logs, err := n.logs("web", &corev1.PodLogOptions{TailLines: ptr.To[int64](1)})
		if err != nil || !strings.HasPrefix(logs, "cfg=") {
			t.Errorf("logs after the restart: %q, %v", logs, err)
		}
	})
}
