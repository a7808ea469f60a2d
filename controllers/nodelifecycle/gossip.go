package nodelifecycle

import (
	"cairn/controllers/internal/clusterutil"
	"cairn/node/gossip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkReports marks node dead when enough of its peers reported it dead
// through gossip (the annotations gossip.Agreed reads), so it goes
// NotReady within seconds rather than at the end of its grace period.
// ready is how many nodes are Ready, node included if it is; a negative
// value has it counted from the informer. A node already marked dead is
// left alone until a heartbeat revives it, so the controller's own writes
// to the node do not renew the mark.
func (c *Controller) checkReports(node *corev1.Node, ready int) {
	if len(gossip.Reporters(node)) == 0 {
		return
	}
	if ready < 0 {
		ready = c.readyNodes()
	}
	peers := ready
	if isReady(node) {
		peers--
	}
	if !gossip.Agreed(node, peers) {
		return
	}
	c.mu.Lock()
	h, ok := c.health[node.Name]
	marked := ok && !h.deadAt.IsZero()
	c.mu.Unlock()
	if !marked {
		c.log.Info("peers agree the node is dead", "node", node.Name, "reporters", gossip.Reporters(node), "livePeers", peers)
		c.MarkDead(node.Name)
	}
}

// readyNodes counts the nodes whose Ready condition is True.
func (c *Controller) readyNodes() int {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return 0
	}
	return countReady(nodes)
}

func countReady(nodes []*corev1.Node) int {
	n := 0
	for _, node := range nodes {
		if isReady(node) {
			n++
		}
	}
	return n
}

func isReady(node *corev1.Node) bool {
	cond := clusterutil.NodeCondition(node, corev1.NodeReady)
	return cond != nil && cond.Status == corev1.ConditionTrue
}
