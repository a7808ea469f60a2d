// Package schedtest builds pods and nodes for the scheduler's tests with
// short chains, e.g.
//
//	MakePod().Name("p").Req(Res{"cpu": "1"}).Toleration("gpu", "", v1.TaintEffectNoSchedule).Obj()
//	MakeNode().Name("n1").Capacity(Res{"cpu": "4"}).Label("zone", "a").Obj()
package schedtest

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Res is a resource list in strings: Res{"cpu": "500m", "memory": "1Gi"}.
type Res map[v1.ResourceName]string

// List converts r.
func (r Res) List() v1.ResourceList {
	out := v1.ResourceList{}
	for k, v := range r {
		out[k] = resource.MustParse(v)
	}
	return out
}

// PodWrapper builds a pod.
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod in namespace default with one container.
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default"},
		Spec: v1.PodSpec{
			Containers:    []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			SchedulerName: "default-scheduler",
		},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Name sets the name, and the UID to the same value (the API replaces
// it on create).
func (p *PodWrapper) Name(n string) *PodWrapper {
	p.Pod.Name = n
	p.Pod.UID = types.UID(n)
	return p
}

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// UID sets the UID.
func (p *PodWrapper) UID(uid string) *PodWrapper { p.Pod.UID = types.UID(uid); return p }

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Req sets the first container's requests. Extended resources
// (nvidia.com/gpu) get an equal limit, as the API requires.
func (p *PodWrapper) Req(r Res) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Resources.Requests = r.List()
	for name, q := range c.Resources.Requests {
		if strings.Contains(string(name), "/") {
			if c.Resources.Limits == nil {
				c.Resources.Limits = v1.ResourceList{}
			}
			c.Resources.Limits[name] = q
		}
	}
	return p
}

// Container adds a container with requests.
func (p *PodWrapper) Container(r Res) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", len(p.Spec.Containers)), Image: "registry.k8s.io/pause:3.10",
		Resources: v1.ResourceRequirements{Requests: r.List()}})
	return p
}

// InitReq adds an init container with requests.
func (p *PodWrapper) InitReq(r Res) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)),
		Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: r.List()}})
	return p
}

// SidecarReq adds a sidecar: an init container with restartPolicy Always.
func (p *PodWrapper) SidecarReq(r Res) *PodWrapper {
	always := v1.ContainerRestartPolicyAlways
	p.InitReq(r)
	p.Spec.InitContainers[len(p.Spec.InitContainers)-1].RestartPolicy = &always
	return p
}

// Overhead sets the pod overhead.
func (p *PodWrapper) Overhead(r Res) *PodWrapper { p.Spec.Overhead = r.List(); return p }

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Spec.Priority = &v; return p }

// PriorityClass names the pod's priority class; the API server fills in
// its priority.
func (p *PodWrapper) PriorityClass(name string) *PodWrapper {
	p.Spec.PriorityClassName = name
	return p
}

// PreemptNever sets preemptionPolicy Never.
func (p *PodWrapper) PreemptNever() *PodWrapper {
	never := v1.PreemptNever
	p.Spec.PreemptionPolicy = &never
	return p
}

// Node sets spec.nodeName.
func (p *PodWrapper) Node(n string) *PodWrapper { p.Spec.NodeName = n; return p }

// NominatedNode sets status.nominatedNodeName.
func (p *PodWrapper) NominatedNode(n string) *PodWrapper { p.Status.NominatedNodeName = n; return p }

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(n string) *PodWrapper { p.Spec.SchedulerName = n; return p }

// Terminating sets a deletion timestamp.
func (p *PodWrapper) Terminating() *PodWrapper {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// Created sets the creation timestamp.
func (p *PodWrapper) Created(t time.Time) *PodWrapper {
	p.CreationTimestamp = metav1.NewTime(t)
	return p
}

// StartTime sets status.startTime.
func (p *PodWrapper) StartTime(t time.Time) *PodWrapper {
	st := metav1.NewTime(t)
	p.Status.StartTime = &st
	return p
}

// GracePeriod sets terminationGracePeriodSeconds.
func (p *PodWrapper) GracePeriod(s int64) *PodWrapper {
	p.Spec.TerminationGracePeriodSeconds = &s
	return p
}

// Toleration adds a toleration: operator Exists when value is empty.
func (p *PodWrapper) Toleration(key, value string, effect v1.TaintEffect) *PodWrapper {
	t := v1.Toleration{Key: key, Value: value, Effect: effect, Operator: v1.TolerationOpEqual}
	if value == "" {
		t.Operator = v1.TolerationOpExists
	}
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// NodeSelector adds a nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// HostPort adds a TCP host port to the first container.
func (p *PodWrapper) HostPort(port int32) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: v1.ProtocolTCP})
	return p
}

func (p *PodWrapper) affinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// NodeAffinityIn adds a required node affinity term "key in values".
func (p *PodWrapper) NodeAffinityIn(key string, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	}
	ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
		{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}})
	return p
}

// PreferredNodeAffinityIn adds a preferred node affinity term.
func (p *PodWrapper) PreferredNodeAffinityIn(weight int32, key string, values ...string) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.PreferredSchedulingTerm{Weight: weight, Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}}}})
	return p
}

func term(topologyKey string, selector map[string]string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
}

// PodAffinity adds a required pod affinity term.
func (p *PodWrapper) PodAffinity(topologyKey string, selector map[string]string) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, selector))
	return p
}

// PodAntiAffinity adds a required pod anti-affinity term.
func (p *PodWrapper) PodAntiAffinity(topologyKey string, selector map[string]string) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(topologyKey, selector))
	return p
}

// PreferredPodAffinity adds a preferred pod affinity term.
func (p *PodWrapper) PreferredPodAffinity(weight int32, topologyKey string, selector map[string]string) *PodWrapper {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, selector)})
	return p
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, topologyKey string, selector map[string]string) *PodWrapper {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(topologyKey, selector)})
	return p
}

// Spread adds a topology spread constraint.
func (p *PodWrapper) Spread(maxSkew int32, topologyKey string, when v1.UnsatisfiableConstraintAction, selector map[string]string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
	})
	return p
}

// MinDomains sets minDomains on the last spread constraint.
func (p *PodWrapper) MinDomains(n int32) *PodWrapper {
	p.Spec.TopologySpreadConstraints[len(p.Spec.TopologySpreadConstraints)-1].MinDomains = &n
	return p
}
