package gossip

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// settleTime is how long after joining a restarted member waits before it
// clears the reports about itself: long enough for its peers to see it
// alive, so that none of them puts its report back in between.
const settleTime = time.Second

// patchMemoTTL is how long a report write is not repeated while the
// informer has not shown it yet.
const patchMemoTTL = 5 * time.Second

// nodeLister is the part of the Node informer the sync loop reads.
type nodeLister = corelisters.NodeLister

// nodeChanged queues a Node the informer saw change; such a pass may
// remove reports but not add them.
func (g *Gossip) nodeChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		g.markDirty(n.Name, false)
	}
}

// reconcile queues every Node, may add missing reports, and joins the
// peers that are not in the cluster: Nodes whose agent this member never
// saw or saw die (a partition may have healed), and --gossip-join while
// this member is alone.
func (g *Gossip) reconcile(nodes nodeLister) {
	list, err := nodes.List(labels.Everything())
	if err != nil {
		g.log.Warn("listing nodes", "err", err)
		return
	}
	var targets []string
	exists := make(map[string]bool, len(list))
	g.mu.Lock()
	for _, n := range list {
		exists[n.Name] = true
		g.dirty[n.Name] = true
		if n.Name == g.cfg.NodeName {
			continue
		}
		p := g.view[n.Name]
		if p != nil && p.state != stateDead {
			continue
		}
		if addr := g.gossipAddr(n); addr != "" && addr != g.addr {
			targets = append(targets, addr)
		}
	}
	g.dirty[g.cfg.NodeName] = true
	// Forget what happened to members whose Node is gone for good.
	for name, p := range g.view {
		if !exists[name] && p.state != stateAlive {
			delete(g.view, name)
			delete(g.lastPatch, name)
		}
	}
	g.mu.Unlock()
	if g.ml.NumMembers() <= 1 {
		targets = append(targets, g.cfg.Join...)
	}
	if len(targets) == 0 {
		g.joined() // nobody to join: a lone node is settled at once
		return
	}
	g.join(targets)
	g.wake()
}

// gossipAddr is where node's agent gossips: its published address, else
// its InternalIP on this member's port.
func (g *Gossip) gossipAddr(node *corev1.Node) string {
	if a := node.Annotations[AddressAnnotation]; a != "" {
		return a
	}
	_, port, _ := net.SplitHostPort(g.addr)
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			return net.JoinHostPort(a.Address, port)
		}
	}
	return ""
}

// sync looks at the queued Nodes and writes what differs from this
// member's view. It reports whether some write failed and needs a retry.
func (g *Gossip) sync(ctx context.Context, nodes nodeLister) (retry bool) {
	g.mu.Lock()
	queued := g.dirty
	g.dirty = map[string]bool{}
	g.mu.Unlock()
	if len(queued) == 0 {
		return false
	}
	var owners map[string]string // report key → reporter, built once per pass
	for name, mayAdd := range queued {
		node, err := nodes.Get(name)
		if apierrors.IsNotFound(err) {
			if name == g.cfg.NodeName {
				retry = true // the kubelet has not registered it yet
				g.requeue(name, mayAdd)
			}
			continue
		}
		if err != nil {
			g.requeue(name, mayAdd)
			retry = true
			continue
		}
		var set map[string]*string
		var later error
		if name == g.cfg.NodeName {
			set, later = g.selfPatch(node)
		} else {
			if owners == nil {
				owners = g.reportOwners(nodes)
			}
			set = g.peerPatch(node, mayAdd, owners)
		}
		if len(set) > 0 {
			err = g.patch(ctx, name, set)
		}
		if err != nil && ctx.Err() == nil {
			g.log.Warn("updating gossip annotations failed; retrying", "node", name, "err", err)
		}
		if err != nil || later != nil {
			g.requeue(name, mayAdd)
			retry = true
		}
	}
	return retry
}

func (g *Gossip) requeue(name string, mayAdd bool) {
	g.mu.Lock()
	g.dirty[name] = g.dirty[name] || mayAdd
	g.mu.Unlock()
}

// errNotSettled delays the clean-up of our own Node.
var errNotSettled = errors.New("gossip: waiting for peers to see this member alive")

// selfPatch publishes our address and, once, after joining, removes the
// reports about our own node: it is alive again.
func (g *Gossip) selfPatch(node *corev1.Node) (map[string]*string, error) {
	set := map[string]*string{}
	if node.Annotations[AddressAnnotation] != g.addr {
		set[AddressAnnotation] = &g.addr
	}
	g.mu.Lock()
	clean, joinedAt := g.selfClean, g.joinedAt
	g.mu.Unlock()
	if clean {
		return set, nil
	}
	var stale bool
	for k := range node.Annotations {
		if strings.HasPrefix(k, ReportPrefix) {
			set[k], stale = nil, true
		}
	}
	if stale && (joinedAt.IsZero() || g.cfg.Clock.Since(joinedAt) < settleTime) {
		// Publish the address now; the reports go later.
		address := map[string]*string{}
		if v, ok := set[AddressAnnotation]; ok {
			address[AddressAnnotation] = v
		}
		return address, errNotSettled
	}
	g.mu.Lock()
	g.selfClean = true
	g.mu.Unlock()
	if stale {
		g.log.Info("clearing the reports of this node's death", "reports", len(set))
	}
	return set, nil
}

// peerPatch returns the annotation changes that bring node in line with
// this member's view: our report there iff we saw the node die, and, if
// we see it alive, no reports left by reporters that cannot take theirs
// back (dead or gone).
func (g *Gossip) peerPatch(node *corev1.Node, mayAdd bool, owners map[string]string) map[string]*string {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.view[node.Name]
	if p == nil {
		return nil // never seen: neither confirm nor deny
	}
	set := map[string]*string{}
	has := node.Annotations[g.reportKey] != ""
	want := p.state == stateDead
	switch {
	case want && !has && mayAdd:
		now := g.cfg.Clock.Now().UTC().Format(time.RFC3339)
		set[g.reportKey] = &now
	case !want && has:
		set[g.reportKey] = nil
	}
	if p.state == stateAlive {
		for k := range node.Annotations {
			if !strings.HasPrefix(k, ReportPrefix) || k == g.reportKey {
				continue
			}
			reporter, known := owners[k]
			if rp := g.view[reporter]; !known || (rp != nil && rp.state != stateAlive) {
				set[k] = nil
			}
		}
	}
	if v, ours := set[g.reportKey]; ours {
		// A change of our report that the informer has not shown yet is
		// not written again.
		memo, ok := g.lastPatch[node.Name]
		if ok && memo.report == (v != nil) && g.cfg.Clock.Since(memo.at) < patchMemoTTL {
			delete(set, g.reportKey)
		}
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

// reportOwners maps report keys to the reporters they may belong to: the
// members this one knows and the Nodes that exist.
func (g *Gossip) reportOwners(nodes nodeLister) map[string]string {
	owners := map[string]string{}
	if list, err := nodes.List(labels.Everything()); err == nil {
		for _, n := range list {
			owners[ReportKey(n.Name)] = n.Name
		}
	}
	g.mu.Lock()
	for name := range g.view {
		owners[ReportKey(name)] = name
	}
	g.mu.Unlock()
	return owners
}

// patch applies an annotation merge patch to a Node.
func (g *Gossip) patch(ctx context.Context, name string, set map[string]*string) error {
	body, err := annotationPatch(set)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = g.cfg.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "cairn-gossip"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		if v, ours := set[g.reportKey]; ours {
			g.mu.Lock()
			g.lastPatch[name] = patchMemo{report: v != nil, at: g.cfg.Clock.Now()}
			g.mu.Unlock()
		}
		for k, v := range set {
			if strings.HasPrefix(k, ReportPrefix) {
				action := "removed"
				if v != nil {
					action = "reported dead"
				}
				g.log.Info("gossip report "+action, "node", name, "reporter", strings.TrimPrefix(k, ReportPrefix))
			}
		}
	}
	return err
}
