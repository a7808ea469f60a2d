package kubelet

import (
	"context"
	"reflect"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Peer is another node's pod network, reached through its InternalIP.
type Peer struct {
	Node     string
	PodCIDRs []string
	NodeIP   string
}

// Routes installs routes to the other nodes' pod networks; the pod
// network of the agent implements it.
type Routes interface {
	Sync(peers []Peer) error
}

// kickNetwork asks the network loop to look at the nodes again.
func (k *Kubelet) kickNetwork() {
	select {
	case k.networkKick <- struct{}{}:
	default:
	}
}

// networkLoop passes this node's podCIDR to the runtime once the
// nodeipam controller set it, and keeps the routes to the other nodes'
// podCIDRs, from the node informer.
func (k *Kubelet) networkLoop(ctx context.Context) {
	var synced []Peer
	routesOK := false
	retry := time.NewTicker(30 * time.Second)
	defer retry.Stop()
	for {
		k.syncPodCIDR(ctx)
		if k.cfg.Routes != nil {
			peers := k.peers()
			if !routesOK || !reflect.DeepEqual(peers, synced) {
				if err := k.cfg.Routes.Sync(peers); err != nil {
					k.log.Warn("syncing routes to peer nodes failed; retrying", "err", err)
					routesOK = false
				} else {
					synced, routesOK = peers, true
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-k.networkKick:
		case <-retry.C:
			routesOK = false // routes may have been removed behind our back
		}
	}
}

func (k *Kubelet) syncPodCIDR(ctx context.Context) {
	node, err := k.nodeLister.Get(k.cfg.NodeName)
	if err != nil || node.Spec.PodCIDR == "" {
		return
	}
	k.mu.Lock()
	same := node.Spec.PodCIDR == k.podCIDR
	k.mu.Unlock()
	if same {
		return
	}
	_, err = k.rt.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
		RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: node.Spec.PodCIDR}},
	})
	if err != nil {
		k.log.Warn("passing the podCIDR to the runtime failed; retrying", "podCIDR", node.Spec.PodCIDR, "err", err)
		return
	}
	k.log.Info("pod network configured", "podCIDR", node.Spec.PodCIDR)
	if k.cfg.PodNetworkReady != nil {
		k.cfg.PodNetworkReady(node.Spec.PodCIDR)
	}
	k.mu.Lock()
	k.podCIDR = node.Spec.PodCIDR
	k.mu.Unlock()
	k.kickNodeStatus()
}

// peers lists the other nodes that have a podCIDR and an InternalIP.
func (k *Kubelet) peers() []Peer {
	nodes, err := k.nodeLister.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []Peer
	for _, n := range nodes {
		if n.Name == k.cfg.NodeName {
			continue
		}
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		ip := internalIP(n)
		if len(cidrs) == 0 || ip == "" {
			continue
		}
		out = append(out, Peer{Node: n.Name, PodCIDRs: append([]string(nil), cidrs...), NodeIP: ip})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}
