package kubelet

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandboxConfig describes the pod's sandbox to the runtime.
func (k *Kubelet) sandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	if pod.Spec.HostNetwork {
		hostname = ""
	}
	annotations := make(map[string]string, len(pod.Annotations))
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     hostname,
		LogDirectory: k.podLogDir(pod.Namespace, pod.Name, pod.UID),
		DnsConfig:    k.dnsConfig(pod),
		Labels:       sandboxLabels(pod),
		Annotations:  annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    k.podCgroup(pod),
			SecurityContext: sandboxSecurity(pod),
			Sysctls:         sysctls(pod),
			Resources:       podResources(pod),
		},
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol: protocol(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP,
			})
		}
	}
	return cfg
}

func protocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// podCgroup is the pod's cgroup, by QoS class as the kubelet lays them
// out: ROOT/kubepods/pod<uid> for Guaranteed pods,
// ROOT/kubepods/burstable/pod<uid> and ROOT/kubepods/besteffort/pod<uid>.
func (k *Kubelet) podCgroup(pod *corev1.Pod) string {
	root := "/" + strings.Trim(k.cfg.CgroupRoot, "/")
	parent := path.Join(root, "kubepods")
	switch qosClass(pod) {
	case corev1.PodQOSBurstable:
		parent = path.Join(parent, "burstable")
	case corev1.PodQOSBestEffort:
		parent = path.Join(parent, "besteffort")
	}
	return path.Join(parent, "pod"+string(pod.UID))
}

func namespaceMode(host bool, shared runtimeapi.NamespaceMode) runtimeapi.NamespaceMode {
	if host {
		return runtimeapi.NamespaceMode_NODE
	}
	return shared
}

func namespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	pid := runtimeapi.NamespaceMode_CONTAINER
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		pid = runtimeapi.NamespaceMode_POD
	}
	return &runtimeapi.NamespaceOption{
		Network: namespaceMode(pod.Spec.HostNetwork, runtimeapi.NamespaceMode_POD),
		Pid:     namespaceMode(pod.Spec.HostPID, pid),
		Ipc:     namespaceMode(pod.Spec.HostIPC, runtimeapi.NamespaceMode_POD),
	}
}

func sandboxSecurity(pod *corev1.Pod) *runtimeapi.LinuxSandboxSecurityContext {
	sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: namespaceOptions(pod)}
	if psc := pod.Spec.SecurityContext; psc != nil {
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
	for _, c := range pod.Spec.Containers {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			sc.Privileged = true
		}
	}
	return sc
}

func sysctls(pod *corev1.Pod) map[string]string {
	if pod.Spec.SecurityContext == nil || len(pod.Spec.SecurityContext.Sysctls) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		out[s.Name] = s.Value
	}
	return out
}

// dnsConfig is the resolv.conf of the pod: the cluster's DNS for
// ClusterFirst pods when the node knows it (ClusterDNS, or the node's own
// server), the pod's own for None, and the host's (nil) otherwise.
func (k *Kubelet) dnsConfig(pod *corev1.Pod) *runtimeapi.DNSConfig {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	if pod.Spec.HostNetwork && policy == corev1.DNSClusterFirst {
		policy = corev1.DNSDefault
	}
	var cfg *runtimeapi.DNSConfig
	switch policy {
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		servers := append([]string(nil), k.cfg.ClusterDNS...)
		if len(servers) == 0 && k.cfg.NodeDNS != nil {
			if addr, ok := k.cfg.NodeDNS(); ok {
				servers = []string{addr.String()}
			}
		}
		if len(servers) == 0 {
			break
		}
		d := k.cfg.ClusterDomain
		cfg = &runtimeapi.DNSConfig{
			Servers:  servers,
			Searches: []string{pod.Namespace + ".svc." + d, "svc." + d, d},
			Options:  []string{"ndots:5"},
		}
	case corev1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	}
	if pc := pod.Spec.DNSConfig; pc != nil {
		if cfg == nil {
			cfg = &runtimeapi.DNSConfig{}
		}
		cfg.Servers = append(cfg.Servers, pc.Nameservers...)
		cfg.Searches = append(cfg.Searches, pc.Searches...)
		for _, o := range pc.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			cfg.Options = append(cfg.Options, opt)
		}
	}
	return cfg
}

// ensureSandbox makes sure the pod has a ready sandbox. A sandbox that
// died is replaced, after its containers are stopped: they would run
// without a network. It returns whether a sandbox was created.
func (k *Kubelet) ensureSandbox(ctx context.Context, pod *corev1.Pod, rs *podRuntime) (bool, error) {
	if rs.sandboxReady() {
		return false, nil
	}
	var attempt uint32
	if len(rs.Sandboxes) > 0 {
		attempt = rs.Sandboxes[0].Metadata.GetAttempt() + 1
		k.event(pod, nil, corev1.EventTypeNormal, eventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		for _, i := range rs.running() {
			if _, err := k.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: i.ID, Timeout: 0}); err != nil {
				return false, fmt.Errorf("kubelet: stopping container %s of a dead sandbox: %w", i.ID, err)
			}
		}
		for _, sb := range rs.Sandboxes {
			if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				if _, err := k.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
					return false, fmt.Errorf("kubelet: stopping an old sandbox: %w", err)
				}
			}
		}
	}
	cfg := k.sandboxConfig(pod, attempt)
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return false, fmt.Errorf("kubelet: %w", err)
	}
	if _, err := k.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		return false, err
	}
	return true, nil
}
