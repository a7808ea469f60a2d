package cache

import (
	v1 "k8s.io/api/core/v1"
)

// nodeTree keeps node names grouped by zone and lists them interleaved
// (first node of each zone, then the second of each...). A cycle that
// stops after finding enough feasible nodes then still sees every zone.
type nodeTree struct {
	zones    []string
	byZone   map[string][]string
	numNodes int
}

func newNodeTree() *nodeTree { return &nodeTree{byZone: map[string][]string{}} }

func zoneOf(n *v1.Node) string {
	region := n.Labels[v1.LabelTopologyRegion]
	zone := n.Labels[v1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

func (t *nodeTree) add(n *v1.Node) {
	z := zoneOf(n)
	names, ok := t.byZone[z]
	if !ok {
		t.zones = append(t.zones, z)
	}
	for _, name := range names {
		if name == n.Name {
			return
		}
	}
	t.byZone[z] = append(names, n.Name)
	t.numNodes++
}

func (t *nodeTree) remove(n *v1.Node) {
	z := zoneOf(n)
	names := t.byZone[z]
	for i, name := range names {
		if name != n.Name {
			continue
		}
		names = append(names[:i], names[i+1:]...)
		t.numNodes--
		if len(names) > 0 {
			t.byZone[z] = names
			return
		}
		delete(t.byZone, z)
		for j, zz := range t.zones {
			if zz == z {
				t.zones = append(t.zones[:j], t.zones[j+1:]...)
				break
			}
		}
		return
	}
}

func (t *nodeTree) update(old, cur *v1.Node) {
	if old != nil && zoneOf(old) == zoneOf(cur) {
		return
	}
	if old != nil {
		t.remove(old)
	}
	t.add(cur)
}

// list returns the node names, zones interleaved.
func (t *nodeTree) list() []string {
	out := make([]string, 0, t.numNodes)
	for i := 0; len(out) < t.numNodes; i++ {
		for _, z := range t.zones {
			if names := t.byZone[z]; i < len(names) {
				out = append(out, names[i])
			}
		}
	}
	return out
}
