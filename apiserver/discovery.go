package apiserver

import (
	"net/http"
	"sort"

	"cairn/apiserver/registry"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// discovery answers /api, /apis and the per group-version resource lists
// from the registry, so kubectl and client-go find every resource, its
// short names, categories, verbs and subresources. /api and /apis come in
// two forms: the legacy documents, and the aggregated ones
// (apidiscovery.k8s.io/v2) that hold every resource in one answer, which
// client-go asks for first (see discovery_aggregated.go).
type discovery struct {
	groups     []metav1.APIGroup // non-core groups, in registry order
	resources  map[schema.GroupVersion]*metav1.APIResourceList
	aggregated aggregatedDocuments
}

// verbsAll are the verbs of a resource served by the generic REST layer.
var verbsAll = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// subresourceVerbs are the verbs each subresource serves.
var subresourceVerbs = map[string]metav1.Verbs{
	"status":              {"get", "patch", "update"},
	"ephemeralcontainers": {"get", "patch", "update"},
	"scale":               {"get", "patch", "update"},
	"binding":             {"create"},
	"eviction":            {"create"},
	"log":                 {"get"},
	"exec":                {"create", "get"},
	"attach":              {"create", "get"},
	"portforward":         {"create", "get"},
	"finalize":            {"update"},
	"token":               {"create"},
}

// subresourceKinds are the kinds of the subresources that do not answer
// with their resource's own kind.
var subresourceKinds = map[string]schema.GroupVersionKind{
	"scale":       {Group: "autoscaling", Version: "v1", Kind: "Scale"},
	"binding":     {Version: "v1", Kind: "Binding"},
	"eviction":    {Group: "policy", Version: "v1", Kind: "Eviction"},
	"exec":        {Version: "v1", Kind: "PodExecOptions"},
	"attach":      {Version: "v1", Kind: "PodAttachOptions"},
	"portforward": {Version: "v1", Kind: "PodPortForwardOptions"},
	"token":       {Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"},
}

// resourceVerbs are the verbs r serves: namespaces, as in Kubernetes,
// cannot be deleted as a collection.
func resourceVerbs(r *registry.Resource) metav1.Verbs {
	if r.CreateOnly {
		return metav1.Verbs{"create"}
	}
	if !collectionDeletable(r) {
		out := metav1.Verbs{}
		for _, v := range verbsAll {
			if v != "deletecollection" {
				out = append(out, v)
			}
		}
		return out
	}
	return verbsAll
}

// subresourceKind is the kind a subresource of r takes and returns.
func subresourceKind(r *registry.Resource, sub string) schema.GroupVersionKind {
	if gvk, ok := subresourceKinds[sub]; ok {
		return gvk
	}
	return r.GVK()
}

// subresourceVerbsOf are the verbs of a subresource; get for one this
// table does not know.
func subresourceVerbsOf(sub string) metav1.Verbs {
	if v, ok := subresourceVerbs[sub]; ok {
		return v
	}
	return metav1.Verbs{"get"}
}

func newDiscovery(resources []*registry.Resource) *discovery {
	d := &discovery{resources: map[schema.GroupVersion]*metav1.APIResourceList{}, aggregated: newAggregatedDocuments(resources)}
	seenGroup := map[string]bool{}
	for _, r := range resources {
		gv := r.GVR.GroupVersion()
		list := d.resources[gv]
		if list == nil {
			list = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
			d.resources[gv] = list
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         r.GVR.Resource,
			SingularName: singularOf(r),
			Namespaced:   r.Namespaced,
			Kind:         r.Kind,
			Verbs:        resourceVerbs(r),
			ShortNames:   r.ShortNames,
			Categories:   r.Categories,
		})
		for _, sub := range r.Subresources {
			gvk := subresourceKind(r, sub)
			res := metav1.APIResource{Name: r.GVR.Resource + "/" + sub, Namespaced: r.Namespaced, Kind: gvk.Kind, Verbs: subresourceVerbsOf(sub)}
			if gvk.GroupVersion() != gv {
				res.Group, res.Version = gvk.Group, gvk.Version
			}
			list.APIResources = append(list.APIResources, res)
		}
		if gv.Group != "" && !seenGroup[gv.Group] {
			seenGroup[gv.Group] = true
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			d.groups = append(d.groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
	}
	for _, list := range d.resources {
		sort.Slice(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	}
	return d
}

func singularOf(r *registry.Resource) string {
	s := []rune(r.Kind)
	for i, c := range s {
		if c >= 'A' && c <= 'Z' {
			s[i] = c + ('a' - 'A')
		}
	}
	return string(s)
}

// serve answers a discovery path; ok is false for other paths.
func (d *discovery) serve(w http.ResponseWriter, r *http.Request) (ok bool) {
	parts := splitPath(r.URL.Path)
	switch {
	case len(parts) == 1 && (parts[0] == "api" || parts[0] == "apis") && wantsAggregated(r.Header.Values("Accept")):
		d.aggregated.serve(w, r, parts[0])
	case len(parts) == 1 && parts[0] == "api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{
			TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
			Versions:                   []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		})
	case len(parts) == 1 && parts[0] == "apis":
		writeJSON(w, http.StatusOK, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: d.groups})
	case len(parts) == 2 && parts[0] == "api":
		return d.serveList(w, schema.GroupVersion{Version: parts[1]})
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range d.groups {
			if g.Name == parts[1] {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				writeJSON(w, http.StatusOK, &g)
				return true
			}
		}
		return false
	case len(parts) == 3 && parts[0] == "apis":
		return d.serveList(w, schema.GroupVersion{Group: parts[1], Version: parts[2]})
	default:
		return false
	}
	return true
}

func (d *discovery) serveList(w http.ResponseWriter, gv schema.GroupVersion) bool {
	list, ok := d.resources[gv]
	if !ok {
		return false
	}
	writeJSON(w, http.StatusOK, list)
	return true
}
