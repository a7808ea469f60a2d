package core

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// File modes Kubernetes gives secret, configMap, downwardAPI and projected
// volumes when the client sets none.
const defaultVolumeMode int32 = 0o644

// DefaultPodTemplateSpec applies the pod spec defaults inside a template
// (deployments, jobs, ...). Pod-only defaults, such as requests copied from
// limits and enableServiceLinks, are not applied here: Kubernetes applies
// them to pods only, so templates round-trip unchanged.
func DefaultPodTemplateSpec(t *corev1.PodTemplateSpec) {
	DefaultPodSpec(&t.Spec)
}

// DefaultPodSpec applies the defaults of a pod spec and of everything in
// it: containers, ports, probes, volumes and env field references.
func DefaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.HostNetwork {
		defaultHostNetworkPorts(spec.Containers)
		defaultHostNetworkPorts(spec.InitContainers)
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
}

// defaultHostNetworkPorts makes each container port also a host port: with
// the host's network there is no other port to listen on.
func defaultHostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if containers[i].Ports[j].HostPort == 0 {
				containers[i].Ports[j].HostPort = containers[i].Ports[j].ContainerPort
			}
		}
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if c.Lifecycle != nil {
		defaultHandler(c.Lifecycle.PostStart)
		defaultHandler(c.Lifecycle.PreStop)
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
}

// imageTag returns the tag of an image reference as the kubelet sees it:
// "latest" when there is neither tag nor digest, "" for a digest only.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	lastSlash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > lastSlash {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultVolume(v *corev1.Volume) {
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	switch {
	case src.Secret != nil && src.Secret.DefaultMode == nil:
		src.Secret.DefaultMode = ptr.To(defaultVolumeMode)
	case src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil:
		src.ConfigMap.DefaultMode = ptr.To(defaultVolumeMode)
	case src.DownwardAPI != nil && src.DownwardAPI.DefaultMode == nil:
		src.DownwardAPI.DefaultMode = ptr.To(defaultVolumeMode)
	case src.HostPath != nil && src.HostPath.Type == nil:
		src.HostPath.Type = ptr.To(corev1.HostPathUnset)
	case src.Projected != nil:
		defaultProjected(src.Projected)
	}
	if src.DownwardAPI != nil {
		for i := range src.DownwardAPI.Items {
			if f := src.DownwardAPI.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	}
}

func defaultProjected(p *corev1.ProjectedVolumeSource) {
	if p.DefaultMode == nil {
		p.DefaultMode = ptr.To(defaultVolumeMode)
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
			s.ServiceAccountToken.ExpirationSeconds = ptr.To(int64(3600))
		}
		if s.DownwardAPI != nil {
			for j := range s.DownwardAPI.Items {
				if f := s.DownwardAPI.Items[j].FieldRef; f != nil && f.APIVersion == "" {
					f.APIVersion = "v1"
				}
			}
		}
	}
}

// defaultPodOnly applies the defaults Kubernetes gives pods but not pod
// templates.
func defaultPodOnly(pod *corev1.Pod) {
	requestsFromLimits(pod.Spec.Containers)
	requestsFromLimits(pod.Spec.InitContainers)
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
}

// requestsFromLimits sets a missing request to its limit: a container that
// states only a limit is taken to need all of it, which makes it
// Guaranteed when every limit is given.
func requestsFromLimits(containers []corev1.Container) {
	for i := range containers {
		r := &containers[i].Resources
		if r.Limits == nil {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; !ok {
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}
