// Package nodeipam gives every node a pod CIDR cut from the cluster CIDR
// (spec.podCIDR and spec.podCIDRs), as Kubernetes' range allocator does:
// the agent builds its pod network from it and routes to its peers'.
package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"

	"cairn/controllers"
	"cairn/controllers/internal/clusterutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
)

// Name is the controller's name in --controllers and logs.
const Name = "nodeipam"

// ipv6MaskSize is the size of an IPv6 node CIDR, Kubernetes' default.
const ipv6MaskSize = 64

// Reasons of the events the controller records on nodes.
const (
	ReasonCIDRNotAvailable     = "CIDRNotAvailable"
	ReasonCIDRAssignmentFailed = "CIDRAssignmentFailed"
)

// Descriptor registers the controller with the manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{Name: Name, New: func(c *controllers.Context) (controllers.Controller, error) {
		return New(c)
	}}
}

// Controller allocates node pod CIDRs.
type Controller struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	queue    clusterutil.Queue
	recorder record.EventRecorder
	log      *slog.Logger

	mu   sync.Mutex
	sets []*cidrSet // one per cluster CIDR, in podCIDRs order
	// allocated remembers what each node was given, so that a sync that
	// reads a node before its patch reached the informer hands out the
	// same CIDRs again instead of new ones.
	allocated map[string]allocation
}

type allocation struct {
	uid   types.UID
	cidrs []*net.IPNet
}

// New builds the controller for c's Options.ClusterCIDR (a comma-separated
// list, at most one range per IP family) and Options.NodeCIDRMaskSize.
func New(c *controllers.Context) (*Controller, error) {
	sets, err := parseClusterCIDRs(c.Options.ClusterCIDR, c.Options.NodeCIDRMaskSize)
	if err != nil {
		return nil, err
	}
	inf := c.Informers.Core().V1().Nodes()
	ctl := &Controller{
		client: c.Client, nodes: inf.Lister(), queue: clusterutil.NewQueue(Name, c.Clock),
		recorder: c.Recorder("node-ipam-controller"), log: c.Logger.With("controller", Name),
		sets: sets, allocated: map[string]allocation{},
	}
	if _, err := inf.Informer().AddEventHandler(clusterutil.Enqueue(ctl.queue)); err != nil {
		return nil, fmt.Errorf("nodeipam: %w", err)
	}
	return ctl, nil
}

func parseClusterCIDRs(list string, v4Mask int) ([]*cidrSet, error) {
	defaults := controllers.DefaultOptions()
	if strings.TrimSpace(list) == "" {
		list = defaults.ClusterCIDR
	}
	if v4Mask == 0 {
		v4Mask = defaults.NodeCIDRMaskSize
	}
	var sets []*cidrSet
	families := map[bool]bool{}
	for _, s := range strings.Split(list, ",") {
		_, cidr, err := net.ParseCIDR(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("nodeipam: cluster CIDR %q: %w", s, err)
		}
		v6 := cidr.IP.To4() == nil
		if families[v6] {
			return nil, fmt.Errorf("nodeipam: cluster CIDRs %q hold two ranges of one IP family: give at most one IPv4 and one IPv6 range", list)
		}
		families[v6] = true
		mask := v4Mask
		if v6 {
			mask = ipv6MaskSize
		}
		set, err := newCIDRSet(cidr, mask)
		if err != nil {
			return nil, err
		}
		sets = append(sets, set)
	}
	return sets, nil
}

// Run rebuilds the allocation map from the nodes that exist, so no CIDR
// is handed out twice across restarts and leader changes, then allocates
// until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		c.log.Error("listing nodes", "err", err)
	}
	c.mu.Lock()
	for _, n := range nodes {
		c.unsafeRecord(n)
	}
	c.mu.Unlock()
	clusterutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
}

func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		c.unsafeRelease(name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	if a, ok := c.allocated[name]; ok && a.uid != node.UID {
		c.unsafeRelease(name) // the node was deleted and created again
	}
	if len(node.Spec.PodCIDRs) > 0 || node.Spec.PodCIDR != "" {
		c.unsafeRecord(node)
		c.mu.Unlock()
		return nil
	}
	a, ok := c.allocated[name]
	if !ok {
		a, err = c.unsafeAllocate(node)
		if err != nil {
			c.mu.Unlock()
			c.recorder.Eventf(node, corev1.EventTypeNormal, ReasonCIDRNotAvailable, "Node %s status is now: %s", name, ReasonCIDRNotAvailable)
			return err
		}
	}
	c.mu.Unlock()
	return c.assign(ctx, node, a.cidrs)
}

// unsafeAllocate takes one CIDR of each family for node and records it.
func (c *Controller) unsafeAllocate(node *corev1.Node) (allocation, error) {
	a := allocation{uid: node.UID}
	for _, s := range c.sets {
		cidr, err := s.allocate()
		if err != nil {
			for i, got := range a.cidrs {
				c.sets[i].release(got)
			}
			return allocation{}, fmt.Errorf("nodeipam: node %s: %w", node.Name, err)
		}
		a.cidrs = append(a.cidrs, cidr)
	}
	c.allocated[node.Name] = a
	return a, nil
}

// unsafeRecord takes note of the CIDRs node already has, replacing what
// this controller meant to give it. CIDRs outside the cluster ranges are
// the administrator's business and ignored.
func (c *Controller) unsafeRecord(node *corev1.Node) {
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	var held []*net.IPNet
	for _, s := range cidrs {
		_, cidr, err := net.ParseCIDR(s)
		if err != nil {
			continue
		}
		held = append(held, cidr)
	}
	if old, ok := c.allocated[node.Name]; ok && old.uid == node.UID && sameCIDRs(old.cidrs, held) {
		return
	}
	c.unsafeRelease(node.Name)
	if len(held) == 0 {
		return
	}
	a := allocation{uid: node.UID}
	for _, cidr := range held {
		for _, s := range c.sets {
			if s.occupy(cidr) {
				a.cidrs = append(a.cidrs, cidr)
				break
			}
		}
	}
	c.allocated[node.Name] = a
}

func (c *Controller) unsafeRelease(name string) {
	a, ok := c.allocated[name]
	if !ok {
		return
	}
	for _, cidr := range a.cidrs {
		for _, s := range c.sets {
			s.release(cidr)
		}
	}
	delete(c.allocated, name)
}

func sameCIDRs(a, b []*net.IPNet) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].String() != b[i].String() {
			return false
		}
	}
	return true
}

// assign writes cidrs into node's spec with a patch that only sets the
// two fields.
func (c *Controller) assign(ctx context.Context, node *corev1.Node, cidrs []*net.IPNet) error {
	strs := make([]string, len(cidrs))
	for i, cidr := range cidrs {
		strs[i] = cidr.String()
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": strs[0], "podCIDRs": strs}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		c.unsafeRelease(node.Name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		c.recorder.Eventf(node, corev1.EventTypeWarning, ReasonCIDRAssignmentFailed, "Node %s: cannot assign pod CIDRs %v: %v", node.Name, strs, err)
		return fmt.Errorf("nodeipam: assigning %v to node %s: %w", strs, node.Name, err)
	}
	c.log.Info("assigned pod CIDRs", "node", node.Name, "cidrs", strs)
	return nil
}
