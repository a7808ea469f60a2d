package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"cairn/node/kubelet/downward"
	"cairn/node/kubelet/envvars"
	"cairn/node/kubelet/prober"
	"cairn/node/kubelet/volumes"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// minGracePeriod is the least a container is given to stop after its
// preStop hook, as in Kubernetes.
const minGracePeriod = 2

// postStartTimeout bounds a postStart hook, which Kubernetes lets run
// unbounded; a hung hook must not hang the pod's worker forever.
const postStartTimeout = 2 * time.Minute

// volumeSet is a pod's volumes ready on the host, by name.
type volumeSet map[string]volumes.Volume

// startContainer creates and starts an instance of the container, and
// runs its postStart hook. It returns why the container must wait when
// it could not.
func (k *Kubelet) startContainer(ctx context.Context, w *podWorker, pod *corev1.Pod, rs *podRuntime, r startRequest, sb *runtimeapi.PodSandboxConfig) *waiting {
	c := r.Container
	if t := ephemeralTarget(pod, c.Name); t != nil && *t != "" {
		l := rs.Views[*t].Latest
		if l == nil || l.State != stateRunning {
			msg := fmt.Sprintf("target container %q is not running", *t)
			k.event(pod, c, corev1.EventTypeWarning, eventFailed, "Error: %s", msg)
			return &waiting{Reason: reasonCreateConfigError, Message: msg}
		}
		r.TargetID = l.ID
	}
	imageRef, wt := k.ensureImage(ctx, w, pod, c, sb)
	if wt != nil {
		return wt
	}
	podIPs := k.podIPs(pod, rs)
	cfg, err := k.containerConfig(ctx, w, pod, c, r, podIPs, imageRef)
	if err != nil {
		k.event(pod, c, corev1.EventTypeWarning, eventFailed, "Error: %v", err)
		return &waiting{Reason: reasonCreateConfigError, Message: err.Error()}
	}
	created, err := k.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: rs.Sandbox.Id, Config: cfg, SandboxConfig: sb})
	if err != nil {
		k.event(pod, c, corev1.EventTypeWarning, eventFailed, "Error: %v", err)
		return &waiting{Reason: reasonCreateContainerErr, Message: err.Error()}
	}
	k.event(pod, c, corev1.EventTypeNormal, eventCreated, "Created container: %s", c.Name)
	if _, err := k.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
		k.event(pod, c, corev1.EventTypeWarning, eventFailed, "Error: %v", err)
		return &waiting{Reason: reasonRunContainerError, Message: err.Error()}
	}
	k.event(pod, c, corev1.EventTypeNormal, eventStarted, "Started container %s", c.Name)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		target := prober.Target{Pod: pod, Container: c, ContainerID: created.ContainerId, PodIP: first(podIPs)}
		if err := k.runner.Hook(ctx, c.Lifecycle.PostStart, postStartTimeout, target); err != nil {
			msg := fmt.Sprintf("PostStartHook failed: %v", err)
			k.event(pod, c, corev1.EventTypeWarning, eventFailedPostStart, "%s", msg)
			k.killContainer(ctx, pod, c, created.ContainerId, first(podIPs), gracePeriodOf(pod, nil), "FailedPostStartHook", false)
			return &waiting{Reason: reasonPostStartHookError, Message: msg}
		}
	}
	return nil
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// containerConfig describes an instance to the runtime: its environment
// and expanded command, its mounts, resources and security.
func (k *Kubelet) containerConfig(ctx context.Context, w *podWorker, pod *corev1.Pod, c *corev1.Container, r startRequest, podIPs []string, imageRef string) (*runtimeapi.ContainerConfig, error) {
	env, err := envvars.Build(ctx, pod, c, envvars.Sources{
		ConfigMap: func(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
			return k.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		},
		Secret: func(ctx context.Context, ns, name string) (*corev1.Secret, error) {
			return k.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		Services:    k.services(),
		IPs:         downward.PodIPs{PodIPs: podIPs, HostIPs: []string{k.cfg.NodeIP.String()}},
		Allocatable: k.allocatable(),
	})
	if err != nil {
		return nil, err
	}
	lookup := envvars.Lookup(envvars.Map(env))
	mounts, err := k.mounts(pod, c, w.volumes, lookup, r.RestartCount, podIPs)
	if err != nil {
		return nil, err
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(r.RestartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     envvars.ExpandAll(c.Command, lookup),
		Args:        envvars.ExpandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Mounts:      mounts,
		Labels:      containerLabels(pod, c),
		Annotations: containerAnnotations(pod, c, r.RestartCount),
		LogPath:     filepath.Join(c.Name, strconv.Itoa(int(r.RestartCount))+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(pod, c, k.nodeMemory()),
			SecurityContext: containerSecurity(pod, c),
		},
	}
	targetNamespace(cfg.Linux.SecurityContext, r.TargetID)
	for _, e := range env {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	return cfg, nil
}

// mounts are the container's volume mounts on host paths, plus the
// kubelet's own: /etc/hosts and the termination message file.
func (k *Kubelet) mounts(pod *corev1.Pod, c *corev1.Container, vols volumeSet, lookup func(string) (string, bool), restartCount int32, podIPs []string) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", m.Name, c.Name)
		}
		host := v.Path
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = envvars.Expand(m.SubPathExpr, lookup)
		}
		if sub != "" {
			var err error
			if host, err = subPath(v.Path, sub); err != nil {
				return nil, err
			}
		}
		prop := runtimeapi.MountPropagation_PROPAGATION_PRIVATE
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case corev1.MountPropagationHostToContainer:
				prop = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case corev1.MountPropagationBidirectional:
				prop = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			}
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: m.MountPath, HostPath: host, Readonly: m.ReadOnly || v.ReadOnly, Propagation: prop})
		mounted[m.MountPath] = true
	}
	podDir := k.volumes.PodDir(pod.UID)
	if !pod.Spec.HostNetwork && !mounted["/etc/hosts"] {
		path := filepath.Join(podDir, "etc-hosts")
		if err := os.WriteFile(path, hostsFile(pod, podIPs, k.cfg.ClusterDomain), 0o644); err != nil {
			return nil, err
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: path})
	}
	if p := c.TerminationMessagePath; p != "" && !mounted[p] {
		path := k.terminationMessageFile(pod, c.Name, restartCount)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, nil, 0o666); err != nil {
			return nil, err
		}
		if err := os.Chmod(path, 0o666); err != nil {
			return nil, err
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: p, HostPath: path})
	}
	return out, nil
}

// subPath resolves a volume mount's subPath, creating it as a directory
// when missing, and refuses one that leads out of the volume.
func subPath(volume, sub string) (string, error) {
	if filepath.IsAbs(sub) || strings.HasPrefix(filepath.Clean(sub), "..") {
		return "", fmt.Errorf("invalid subPath %q: must be a relative path within the volume", sub)
	}
	path := filepath.Join(volume, sub)
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		if err := os.MkdirAll(path, 0o750); err != nil {
			return "", err
		}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	base, err := filepath.EvalSymlinks(volume)
	if err != nil {
		return "", err
	}
	if real != base && !strings.HasPrefix(real, base+"/") {
		return "", fmt.Errorf("subPath %q leads outside its volume", sub)
	}
	return real, nil
}

// hostsFile is a pod's /etc/hosts, as the kubelet writes it.
func hostsFile(pod *corev1.Pod, podIPs []string, domain string) []byte {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	for _, ip := range podIPs {
		if pod.Spec.Subdomain != "" {
			fqdn := fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, domain)
			fmt.Fprintf(&b, "%s\t%s\t%s\n", ip, fqdn, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return []byte(b.String())
}

func (k *Kubelet) terminationMessageFile(pod *corev1.Pod, container string, restartCount int32) string {
	return filepath.Join(k.volumes.PodDir(pod.UID), "containers", container, strconv.Itoa(int(restartCount)))
}

// maxTerminationMessage bounds a termination message, as Kubernetes does.
const maxTerminationMessage = 4096

// terminationMessage reads an exited instance's message: its file, or
// for FallbackToLogsOnError and a failure, the end of its log.
func (k *Kubelet) terminationMessage(w *podWorker, pod *corev1.Pod) func(c *corev1.Container, i *instance) string {
	return func(c *corev1.Container, i *instance) string {
		if m, ok := w.messages[i.ID]; ok {
			return m
		}
		var msg string
		if b, err := readTail(k.terminationMessageFile(pod, c.Name, i.RestartCount), maxTerminationMessage); err == nil {
			msg = string(b)
		}
		if msg == "" && i.ExitCode != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && i.LogPath != "" {
			msg = lastLogLines(i.LogPath, 80, 2048)
		}
		w.messages[i.ID] = msg
		return msg
	}
}

func (k *Kubelet) services() []*corev1.Service {
	if k.serviceLister == nil {
		return nil
	}
	s, _ := k.serviceLister.List(labels.Everything())
	return s
}

// allocatable is the node's, for resourceFieldRef of unset limits.
func (k *Kubelet) allocatable() corev1.ResourceList {
	if k.nodeLister != nil {
		if n, err := k.nodeLister.Get(k.cfg.NodeName); err == nil && n.Status.Allocatable != nil {
			return n.Status.Allocatable
		}
	}
	return nil
}

func (k *Kubelet) nodeMemory() int64 {
	if a := k.allocatable(); a != nil {
		return a.Memory().Value()
	}
	return 0
}

func containerSecurity(pod *corev1.Pod, c *corev1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	psc := pod.Spec.SecurityContext
	if psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
	}
	csc := c.SecurityContext
	if csc == nil {
		return sc
	}
	if csc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *csc.RunAsUser}
	}
	if csc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *csc.RunAsGroup}
	}
	if csc.Privileged != nil {
		sc.Privileged = *csc.Privileged
	}
	if csc.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
	}
	if csc.AllowPrivilegeEscalation != nil {
		sc.NoNewPrivs = !*csc.AllowPrivilegeEscalation
	}
	if caps := csc.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	return sc
}

// killContainer stops an instance: the preStop hook first (when
// preStop), then the runtime's stop, which sends SIGTERM and, after what
// is left of grace seconds, SIGKILL.
func (k *Kubelet) killContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, grace int64, message string, preStop bool) error {
	if c != nil {
		if message == "" {
			message = "Stopping container " + c.Name
		}
		k.event(pod, c, corev1.EventTypeNormal, eventKilling, "%s", message)
	}
	if preStop && c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		start := time.Now()
		target := prober.Target{Pod: pod, Container: c, ContainerID: id, PodIP: podIP}
		if err := k.runner.Hook(ctx, c.Lifecycle.PreStop, time.Duration(grace)*time.Second, target); err != nil {
			k.event(pod, c, corev1.EventTypeWarning, eventFailedPreStop, "PreStopHook failed: %v", err)
		}
		grace -= int64(time.Since(start) / time.Second)
		if grace < minGracePeriod {
			grace = minGracePeriod
		}
	}
	_, err := k.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: grace})
	if err != nil {
		return fmt.Errorf("kubelet: stopping container %s: %w", id, err)
	}
	return nil
}

// gracePeriodOf is how long a pod's containers get to stop: the
// deletion's grace, else the pod's, else a probe's own override.
func gracePeriodOf(pod *corev1.Pod, probe *corev1.Probe) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if probe != nil && probe.TerminationGracePeriodSeconds != nil {
		return *probe.TerminationGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}
