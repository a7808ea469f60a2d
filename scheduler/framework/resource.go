package framework

import (
	v1 "k8s.io/api/core/v1"
)

// Default requests the scoring plugins assume for a container that asks
// for no cpu or memory, so that best-effort pods still spread instead of
// piling onto one node that looks empty.
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// Resource is an amount of the resources the scheduler accounts for, in
// integers so that fitting a pod is arithmetic rather than Quantity math.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is only meaningful for allocatable.
	AllowedPodNumber int64
	// Scalar holds extended resources (nvidia.com/gpu, hugepages-2Mi...).
	Scalar map[v1.ResourceName]int64
}

// NewResource converts a resource list.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds the quantities of rl.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			r.AddScalar(name, q.Value())
		}
	}
}

// AddScalar adds v of an extended resource.
func (r *Resource) AddScalar(name v1.ResourceName, v int64) {
	if r.Scalar == nil {
		r.Scalar = map[v1.ResourceName]int64{}
	}
	r.Scalar[name] += v
}

// Plus adds o to r.
func (r *Resource) Plus(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.Scalar {
		r.AddScalar(k, v)
	}
}

// Minus subtracts o from r.
func (r *Resource) Minus(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.Scalar {
		r.AddScalar(k, -v)
	}
}

// SetMax raises each quantity of r to at least the one in o.
func (r *Resource) SetMax(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	r.AllowedPodNumber = max(r.AllowedPodNumber, o.AllowedPodNumber)
	for k, v := range o.Scalar {
		if v > r.Scalar[k] {
			if r.Scalar == nil {
				r.Scalar = map[v1.ResourceName]int64{}
			}
			r.Scalar[k] = v
		}
	}
}

// Clone returns a copy that shares nothing with r.
func (r Resource) Clone() Resource {
	if r.Scalar != nil {
		s := make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			s[k] = v
		}
		r.Scalar = s
	}
	return r
}

// PodRequests returns what a pod occupies on a node once it runs, as the
// kubelet admits it: the larger of the running containers' sum and the
// largest init step, plus the pod overhead. Sidecars (init containers
// with restartPolicy Always) keep running, so they add to the sum and to
// every init step that starts after them.
//
// Worked example: init [a: 2 cpu], sidecar s: 1 cpu, init [b: 1 cpu],
// containers [c: 1 cpu]. Steps: a alone = 2; b with s running = 2; then
// c + s = 2. Result 2 cpu (+ overhead).
func PodRequests(pod *v1.Pod) Resource {
	return podRequests(pod, func(c *v1.Container) Resource { return NewResource(c.Resources.Requests) })
}

// PodNonZeroRequests is PodRequests where containers that ask for no cpu
// or memory count DefaultMilliCPURequest and DefaultMemoryRequest; the
// scoring plugins use it.
func PodNonZeroRequests(pod *v1.Pod) Resource {
	return podRequests(pod, func(c *v1.Container) Resource {
		var r Resource
		if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
			r.MilliCPU = q.MilliValue()
		} else {
			r.MilliCPU = DefaultMilliCPURequest
		}
		if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
			r.Memory = q.Value()
		} else {
			r.Memory = DefaultMemoryRequest
		}
		return r
	})
}

func podRequests(pod *v1.Pod, of func(*v1.Container) Resource) Resource {
	var sum Resource
	for i := range pod.Spec.Containers {
		c := of(&pod.Spec.Containers[i])
		sum.Plus(&c)
	}
	var sidecars, initMax Resource
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		r := of(ic)
		if ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sum.Plus(&r)
			sidecars.Plus(&r)
			step := sidecars.Clone()
			initMax.SetMax(&step)
			continue
		}
		r.Plus(&sidecars)
		initMax.SetMax(&r)
	}
	sum.SetMax(&initMax)
	if pod.Spec.Overhead != nil {
		sum.Add(pod.Spec.Overhead)
	}
	return sum
}
