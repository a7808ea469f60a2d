package nodelifecycle

import (
	corev1 "k8s.io/api/core/v1"
)

// zoneState is how much of a zone is unhealthy.
type zoneState int

const (
	// zoneNormal: few nodes are down; evict at the primary rate.
	zoneNormal zoneState = iota
	// zonePartial: a large share of the zone is down, more likely a
	// network problem than many machines failing at once; evict slowly,
	// or not at all in small clusters.
	zonePartial
	// zoneFull: every node of the zone is down; evict at the primary rate,
	// unless every zone is, see masterDisruption.
	zoneFull
)

func (s zoneState) String() string {
	return [...]string{"Normal", "PartialDisruption", "FullDisruption"}[s]
}

// zoneKey groups nodes by region and zone labels.
func zoneKey(node *corev1.Node) string {
	return node.Labels[corev1.LabelTopologyRegion] + ":\x00:" + node.Labels[corev1.LabelTopologyZone]
}

// stateOf classifies a zone by how many of its nodes are ready.
func (c *Controller) stateOf(ready, notReady int) zoneState {
	switch {
	case ready == 0 && notReady > 0:
		return zoneFull
	case notReady > 2 && float64(notReady)/float64(ready+notReady) >= c.cfg.UnhealthyZoneThreshold:
		return zonePartial
	default:
		return zoneNormal
	}
}

// evictionRate is the NoExecute tainting rate (nodes per second) for a
// zone of size nodes in state s.
func (c *Controller) evictionRate(s zoneState, size int) float64 {
	switch s {
	case zonePartial:
		if size <= c.cfg.LargeClusterThreshold {
			return 0
		}
		return c.cfg.SecondaryEvictionRate
	default:
		return c.evictionQPS
	}
}
