package config

import "cairn/scheduler/plugins/names"

// DefaultPlugins returns the plugins a profile runs unless told
// otherwise, in order, with Kubernetes' default score weights.
func DefaultPlugins() []Plugin {
	weights := map[string]int32{
		names.TaintToleration:                 3,
		names.NodeAffinity:                    2,
		names.PodTopologySpread:               2,
		names.InterPodAffinity:                2,
		names.NodeResourcesLeastAllocated:     1,
		names.NodeResourcesBalancedAllocation: 1,
	}
	all := names.All()
	out := make([]Plugin, len(all))
	for i, n := range all {
		out[i] = Plugin{Name: n, Weight: max(1, weights[n])}
	}
	return out
}

// EffectivePlugins applies the profile's Disabled then Enabled lists to
// the default plugins. Plugins enabled beyond the defaults run after
// them, in the order given.
func (p *Profile) EffectivePlugins() []Plugin {
	disabled := map[string]bool{}
	for _, pl := range p.Plugins.Disabled {
		disabled[pl.Name] = true
	}
	var out []Plugin
	index := map[string]int{}
	if !disabled["*"] {
		for _, pl := range DefaultPlugins() {
			if !disabled[pl.Name] {
				index[pl.Name] = len(out)
				out = append(out, pl)
			}
		}
	}
	defaults := map[string]int32{}
	for _, pl := range DefaultPlugins() {
		defaults[pl.Name] = pl.Weight
	}
	for _, pl := range p.Plugins.Enabled {
		w := pl.Weight
		if w == 0 {
			w = max(1, defaults[pl.Name])
		}
		if i, ok := index[pl.Name]; ok {
			out[i].Weight = w
			continue
		}
		index[pl.Name] = len(out)
		out = append(out, Plugin{Name: pl.Name, Weight: w})
	}
	return out
}
