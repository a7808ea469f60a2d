package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cairn/apiserver/registry"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mediaDiscoveryV2 is the Content-Type of an aggregated discovery
// document, as Kubernetes sends it; client-go recognises the document by
// its g, v and as parameters.
const mediaDiscoveryV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// aggregatedDocument is one encoded APIGroupDiscoveryList and its ETag.
type aggregatedDocument struct {
	body []byte
	etag string // quoted, as the header carries it
}

// aggregatedDocuments are the answers of /api (the core group) and /apis
// (every other group) in aggregated form. The registry does not change
// while the server runs, so they are encoded once; every API server built
// from the same registry has the same ETags, so a client's cached copy
// stays valid whichever server it reaches.
type aggregatedDocuments map[string]aggregatedDocument

func newAggregatedDocuments(resources []*registry.Resource) aggregatedDocuments {
	core := &apidiscoveryv2.APIGroupDiscoveryList{}
	groups := &apidiscoveryv2.APIGroupDiscoveryList{}
	// Groups and their versions keep the registry's order, which is their
	// priority; resources are sorted by name, as in Kubernetes.
	type at struct {
		list           *apidiscoveryv2.APIGroupDiscoveryList
		group, version int
	}
	where := map[string]at{}
	for _, r := range resources {
		gv := r.GVR.GroupVersion()
		w, ok := where[gv.String()]
		if !ok {
			w.list = groups
			if gv.Group == "" {
				w.list = core
			}
			w.group = slices.IndexFunc(w.list.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == gv.Group })
			if w.group < 0 {
				w.list.Items = append(w.list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
				w.group = len(w.list.Items) - 1
			}
			g := &w.list.Items[w.group]
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
			w.version = len(g.Versions) - 1
			where[gv.String()] = w
		}
		v := &w.list.Items[w.group].Versions[w.version]
		v.Resources = append(v.Resources, aggregatedResource(r))
	}
	for _, list := range []*apidiscoveryv2.APIGroupDiscoveryList{core, groups} {
		list.TypeMeta = metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}
		for i := range list.Items {
			for j := range list.Items[i].Versions {
				res := list.Items[i].Versions[j].Resources
				sort.Slice(res, func(a, b int) bool { return res[a].Resource < res[b].Resource })
			}
		}
	}
	return aggregatedDocuments{"api": encodeAggregated(core), "apis": encodeAggregated(groups)}
}

func aggregatedResource(r *registry.Resource) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if r.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	gvk := r.GVK()
	out := apidiscoveryv2.APIResourceDiscovery{
		Resource:         r.GVR.Resource,
		ResponseKind:     &metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Scope:            scope,
		SingularResource: singularOf(r),
		Verbs:            resourceVerbs(r),
		ShortNames:       r.ShortNames,
		Categories:       r.Categories,
	}
	for _, sub := range r.Subresources {
		k := subresourceKind(r, sub)
		out.Subresources = append(out.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource:  sub,
			ResponseKind: &metav1.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind},
			Verbs:        subresourceVerbsOf(sub),
		})
	}
	sort.Slice(out.Subresources, func(a, b int) bool { return out.Subresources[a].Subresource < out.Subresources[b].Subresource })
	return out
}

func encodeAggregated(list *apidiscoveryv2.APIGroupDiscoveryList) aggregatedDocument {
	body, err := json.Marshal(list)
	if err != nil {
		// Plain structs of strings and slices always encode.
		panic(fmt.Sprintf("apiserver: encoding aggregated discovery: %v", err))
	}
	sum := sha256.Sum256(body)
	return aggregatedDocument{body: body, etag: strconv.Quote(strings.ToUpper(hex.EncodeToString(sum[:])))}
}

// serve answers /api or /apis (root) with its aggregated document, or
// with 304 Not Modified when the client already holds it (If-None-Match),
// as Kubernetes does.
func (a aggregatedDocuments) serve(w http.ResponseWriter, r *http.Request, root string) {
	doc := a[root]
	h := w.Header()
	h.Set("ETag", doc.etag)
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", "public")
	if r.Header.Get("If-None-Match") == doc.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", mediaDiscoveryV2)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc.body)
}

// wantsAggregated reports whether the Accept header values rank the
// aggregated v2 document above the legacy JSON ones. Only v2 is served:
// Kubernetes no longer serves v2beta1 and client-go no longer asks for
// it, so a v2beta1 entry is skipped like any type this server cannot
// produce. The nopeer profile is accepted: one server has no peers to
// leave out.
func wantsAggregated(accept []string) bool {
	best, aggregated := 0.0, false
	for _, value := range accept {
		for _, entry := range strings.Split(value, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(entry))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil {
					continue
				}
			}
			isV2 := mt == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList"
			isLegacy := params["as"] == "" && (mt == "application/json" || mt == "application/*" || mt == "*/*")
			if (!isV2 && !isLegacy) || q <= best {
				continue
			}
			best, aggregated = q, isV2
		}
	}
	return aggregated
}
