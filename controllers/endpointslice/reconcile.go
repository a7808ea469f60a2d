package endpointslice

import (
	"sort"

	"cairn/controllers/internal/svcendpoints"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// plan is the writes that bring a service's slices to the desired state.
type plan struct {
	creates, updates, deletes []*discoveryv1.EndpointSlice
}

// reconciler computes plans for one service with at most max endpoints a
// slice. It writes as little as it can: a slice whose endpoints did not
// change is left alone, new endpoints go first into slices that are
// being rewritten anyway, and a slice emptied of endpoints is reused
// rather than deleted when new slices are needed.
type reconciler struct {
	svc *corev1.Service
	max int
}

func (r *reconciler) plan(existing []*discoveryv1.EndpointSlice, groups map[string]*group) plan {
	var p plan
	byGroup := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := sliceGroupKey(s)
		byGroup[k] = append(byGroup[k], s)
	}
	total := 0
	for _, g := range groups {
		total += len(g.endpoints)
	}
	for k, slices := range byGroup {
		if _, ok := groups[k]; !ok {
			p.deletes = append(p.deletes, slices...)
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.planGroup(&p, groups[k], byGroup[k])
	}
	if total == 0 {
		r.placeholder(&p)
	}
	return p
}

// placeholder keeps one empty slice for a service without endpoints, as
// Kubernetes does, so that consumers can tell "no endpoints" from "not
// processed yet".
func (r *reconciler) placeholder(p *plan) {
	at := addressTypes(r.svc)[0]
	reuse := -1
	for i, s := range p.deletes {
		if s.AddressType != at {
			continue
		}
		if len(s.Endpoints) == 0 && len(s.Ports) == 0 {
			reuse = i
			break
		}
		if reuse < 0 {
			reuse = i
		}
	}
	if reuse < 0 {
		p.creates = append(p.creates, r.newSlice(at, nil, nil))
		return
	}
	s := p.deletes[reuse]
	p.deletes = append(p.deletes[:reuse], p.deletes[reuse+1:]...)
	if !r.current(s) || len(s.Endpoints) > 0 || len(s.Ports) > 0 {
		p.updates = append(p.updates, r.rebuilt(s, nil, nil))
	}
}

func (r *reconciler) planGroup(p *plan, g *group, slices []*discoveryv1.EndpointSlice) {
	sort.Slice(slices, func(i, j int) bool { return slices[i].Name < slices[j].Name })
	placed := map[string]bool{}
	var updated, unchanged, emptied []*discoveryv1.EndpointSlice
	for _, s := range slices {
		changed := !r.current(s)
		var kept []discoveryv1.Endpoint
		for _, ep := range s.Endpoints {
			addr := ""
			if len(ep.Addresses) > 0 {
				addr = ep.Addresses[0]
			}
			want, ok := g.endpoints[addr]
			if !ok || placed[addr] {
				changed = true
				continue
			}
			placed[addr] = true
			if !equality.Semantic.DeepEqual(ep, want) {
				changed = true
			}
			kept = append(kept, want)
		}
		switch {
		case !changed:
			unchanged = append(unchanged, s)
		case len(kept) == 0:
			emptied = append(emptied, s)
		default:
			updated = append(updated, r.rebuilt(s, g.ports, kept))
		}
	}
	remaining := make([]string, 0, len(g.endpoints))
	for addr := range g.endpoints {
		if !placed[addr] {
			remaining = append(remaining, addr)
		}
	}
	sort.Strings(remaining)
	take := func(n int) []discoveryv1.Endpoint {
		out := make([]discoveryv1.Endpoint, n)
		for i, addr := range remaining[:n] {
			out[i] = g.endpoints[addr]
		}
		remaining = remaining[n:]
		return out
	}
	for _, s := range updated {
		if room := r.max - len(s.Endpoints); room > 0 && len(remaining) > 0 {
			s.Endpoints = append(s.Endpoints, take(min(room, len(remaining)))...)
		}
	}
	for len(remaining) > 0 {
		n := min(r.max, len(remaining))
		if n < r.max {
			// The last few endpoints go into the fullest untouched slice
			// that has room, one write instead of a new slice.
			best := -1
			for i, s := range unchanged {
				if r.max-len(s.Endpoints) >= n && (best < 0 || len(s.Endpoints) > len(unchanged[best].Endpoints)) {
					best = i
				}
			}
			if best >= 0 {
				s := r.rebuilt(unchanged[best], g.ports, append(append([]discoveryv1.Endpoint(nil), unchanged[best].Endpoints...), take(n)...))
				unchanged = append(unchanged[:best], unchanged[best+1:]...)
				updated = append(updated, s)
				continue
			}
		}
		if len(emptied) > 0 {
			updated = append(updated, r.rebuilt(emptied[0], g.ports, take(n)))
			emptied = emptied[1:]
			continue
		}
		p.creates = append(p.creates, r.newSlice(g.addrType, g.ports, take(n)))
	}
	p.updates = append(p.updates, updated...)
	p.deletes = append(p.deletes, emptied...)
}

// current reports whether s's labels and owner are what the controller
// writes.
func (r *reconciler) current(s *discoveryv1.EndpointSlice) bool {
	want := r.labels()
	if !equality.Semantic.DeepEqual(s.Labels, want) {
		return false
	}
	for _, o := range s.OwnerReferences {
		if o.UID == r.svc.UID && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// rebuilt returns a copy of s with the controller's labels and owner and
// the given ports and endpoints.
func (r *reconciler) rebuilt(s *discoveryv1.EndpointSlice, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	out := s.DeepCopy()
	out.Labels = r.labels()
	out.OwnerReferences = []metav1.OwnerReference{r.ownerRef()}
	out.Ports = ports
	out.Endpoints = eps
	return out
}

func (r *reconciler) newSlice(at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: slicePrefix(r.svc.Name), Namespace: r.svc.Namespace,
			Labels: r.labels(), OwnerReferences: []metav1.OwnerReference{r.ownerRef()},
		},
		AddressType: at, Ports: ports, Endpoints: eps,
	}
}

// slicePrefix is the generateName of a service's slices, short enough
// for the generated suffix to fit in a DNS label.
func slicePrefix(svc string) string {
	const maxPrefix = 63 - 5 - 1
	if len(svc) > maxPrefix {
		svc = svc[:maxPrefix]
	}
	return svc + "-"
}

// labels are the service's own labels plus the ones that tie a slice to
// it and to this controller.
func (r *reconciler) labels() map[string]string {
	out := map[string]string{}
	for k, v := range r.svc.Labels {
		if k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == svcendpoints.LabelHeadless {
			continue
		}
		out[k] = v
	}
	out[discoveryv1.LabelServiceName] = r.svc.Name
	out[discoveryv1.LabelManagedBy] = ControllerName
	if svcendpoints.Headless(r.svc) {
		out[svcendpoints.LabelHeadless] = ""
	}
	return out
}

func (r *reconciler) ownerRef() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "v1", Kind: "Service", Name: r.svc.Name, UID: r.svc.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}
