package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// NodeInfo is a node with the aggregate of the pods placed on it (bound
// or assumed), kept up to date incrementally by the cache so that a
// filter is arithmetic over precomputed sums.
type NodeInfo struct {
	node *v1.Node
	// Copies of the node fields every cycle reads, kept next to the sums:
	// following the pointer to the node object for them costs a cache
	// miss per node per cycle.
	name          string
	unschedulable bool
	taints        []v1.Taint
	// Pods are the pods on the node, in no particular order.
	Pods []*PodInfo
	// PodsWithAffinity are the pods that have any pod (anti-)affinity.
	PodsWithAffinity []*PodInfo
	// PodsWithRequiredAntiAffinity are the pods with required
	// anti-affinity terms, which the incoming pod must respect.
	PodsWithRequiredAntiAffinity []*PodInfo
	// UsedPorts are the host ports taken.
	UsedPorts HostPortInfo
	// Requested sums the pods' requests.
	Requested Resource
	// NonZeroRequested sums the pods' non-zero requests (for scoring).
	NonZeroRequested Resource
	// Allocatable is the node's status.allocatable.
	Allocatable Resource
	// Generation increases on every change; snapshots copy only the
	// nodes that changed since they were last updated.
	Generation int64
}

// NewNodeInfo returns a NodeInfo for node (which may be nil while only
// pods are known) holding pods.
func NewNodeInfo(node *v1.Node, pods ...*PodInfo) *NodeInfo {
	ni := &NodeInfo{}
	if node != nil {
		ni.SetNode(node)
	}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node, nil while only pods bound to it are known.
func (n *NodeInfo) Node() *v1.Node { return n.node }

// Name is the node's name.
func (n *NodeInfo) Name() string { return n.name }

// Unschedulable is the node's spec.unschedulable.
func (n *NodeInfo) Unschedulable() bool { return n.unschedulable }

// Taints are the node's spec.taints; callers must not change them.
func (n *NodeInfo) Taints() []v1.Taint { return n.taints }

// SetNode sets or replaces the node object.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.name = node.Name
	n.unschedulable = node.Spec.Unschedulable
	n.taints = node.Spec.Taints
	n.Allocatable = NewResource(node.Status.Allocatable)
}

// RemoveNode forgets the node object but keeps its pods: they still
// exist and must be accounted for if the node comes back.
func (n *NodeInfo) RemoveNode() { n.node = nil }

// AddPod places a pod on the node.
func (n *NodeInfo) AddPod(p *PodInfo) {
	n.Pods = append(n.Pods, p)
	if p.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, p)
	}
	if len(p.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, p)
	}
	n.update(p, 1)
}

// RemovePod removes the pod with pod's UID.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	i := indexOf(n.Pods, pod)
	if i < 0 {
		return fmt.Errorf("framework: no pod %s/%s on node %q", pod.Namespace, pod.Name, n.name)
	}
	p := n.Pods[i]
	n.Pods = removeAt(n.Pods, i)
	if j := indexOf(n.PodsWithAffinity, pod); j >= 0 {
		n.PodsWithAffinity = removeAt(n.PodsWithAffinity, j)
	}
	if j := indexOf(n.PodsWithRequiredAntiAffinity, pod); j >= 0 {
		n.PodsWithRequiredAntiAffinity = removeAt(n.PodsWithRequiredAntiAffinity, j)
	}
	n.update(p, -1)
	return nil
}

func (n *NodeInfo) update(p *PodInfo, sign int) {
	if sign > 0 {
		n.Requested.Plus(&p.Requests)
		n.NonZeroRequested.Plus(&p.NonZeroRequests)
	} else {
		n.Requested.Minus(&p.Requests)
		n.NonZeroRequested.Minus(&p.NonZeroRequests)
	}
	for i := range p.HostPorts {
		hp := &p.HostPorts[i]
		if sign > 0 {
			n.UsedPorts.Add(hp.HostIP, hp.Protocol, hp.HostPort)
		} else {
			n.UsedPorts.Remove(hp.HostIP, hp.Protocol, hp.HostPort)
		}
	}
}

// Clone returns a copy that can be changed (by preemption's dry runs)
// without touching n. PodInfos are shared: they are immutable.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		node:             n.node,
		name:             n.name,
		unschedulable:    n.unschedulable,
		taints:           n.taints,
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		UsedPorts:        n.UsedPorts.Clone(),
		Generation:       n.Generation,
	}
	if len(n.Pods) > 0 {
		c.Pods = append([]*PodInfo(nil), n.Pods...)
	}
	if len(n.PodsWithAffinity) > 0 {
		c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	return c
}

func indexOf(pods []*PodInfo, pod *v1.Pod) int {
	for i, p := range pods {
		if p.Pod.UID == pod.UID {
			return i
		}
	}
	return -1
}

// removeAt swaps in the last element: order does not matter and this
// keeps removal O(1) after the search.
func removeAt(pods []*PodInfo, i int) []*PodInfo {
	last := len(pods) - 1
	pods[i] = pods[last]
	pods[last] = nil
	return pods[:last]
}

// HostPortInfo counts host ports in use by IP, protocol and port.
// 0.0.0.0 (or an empty IP) means every address of the node.
type HostPortInfo map[hostPort]int

type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

const anyIP = "0.0.0.0"

func normalize(ip string, protocol v1.Protocol) (string, v1.Protocol) {
	if ip == "" {
		ip = anyIP
	}
	if protocol == "" {
		protocol = v1.ProtocolTCP
	}
	return ip, protocol
}

// Add marks a port used.
func (h *HostPortInfo) Add(ip string, protocol v1.Protocol, port int32) {
	if *h == nil {
		*h = HostPortInfo{}
	}
	ip, protocol = normalize(ip, protocol)
	(*h)[hostPort{ip, protocol, port}]++
}

// Remove releases a port.
func (h HostPortInfo) Remove(ip string, protocol v1.Protocol, port int32) {
	ip, protocol = normalize(ip, protocol)
	k := hostPort{ip, protocol, port}
	if h[k] <= 1 {
		delete(h, k)
		return
	}
	h[k]--
}

// Conflicts reports whether binding ip:port/protocol would clash with a
// port in use: same address, or either side on every address.
func (h HostPortInfo) Conflicts(ip string, protocol v1.Protocol, port int32) bool {
	if len(h) == 0 {
		return false
	}
	ip, protocol = normalize(ip, protocol)
	if ip == anyIP {
		for k := range h {
			if k.protocol == protocol && k.port == port {
				return true
			}
		}
		return false
	}
	return h[hostPort{ip, protocol, port}] > 0 || h[hostPort{anyIP, protocol, port}] > 0
}

// Clone copies the set.
func (h HostPortInfo) Clone() HostPortInfo {
	if h == nil {
		return nil
	}
	c := make(HostPortInfo, len(h))
	for k, v := range h {
		c[k] = v
	}
	return c
}
