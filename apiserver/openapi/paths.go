package openapi

import (
	"strings"

	"cairn/apiserver/registry"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// operation is one HTTP method on one path, neutral between v2 and v3.
type operation struct {
	method      string // get, put, post, patch, delete
	id          string // operationId, e.g. readCoreV1NamespacedPod
	description string
	action      string // x-kubernetes-action: get, list, post, put, patch, delete, deletecollection
	tag         string // e.g. core_v1
	gvk         schema.GroupVersionKind
	params      []param
	body        string   // definition of the request body; "" for none
	bodyTypes   []string // media types of the request body
	response    string   // definition of the response; "" for plain text
	produces    []string
	codes       []int // success status codes
}

// pathItem is a URL path template and its operations.
type pathItem struct {
	path string
	ops  []operation
}

// Media types.
var (
	objectMedia = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	listMedia   = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"}
	anyMedia    = []string{"*/*"}
	// The patch types this server applies; a PATCH operation listing
	// strategic merge is what makes kubectl apply send one.
	patchMedia = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}
	logMedia   = []string{"text/plain", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
)

// Definitions that operations use besides the resources' own kinds.
const (
	defStatus        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	defDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	defPatch         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	defScale         = "io.k8s.api.autoscaling.v1.Scale"
	defBinding       = "io.k8s.api.core.v1.Binding"
	defEviction      = "io.k8s.api.policy.v1.Eviction"
)

// Kinds of the subresources that are not the resource itself.
var (
	gvkScale    = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	gvkBinding  = schema.GroupVersionKind{Version: "v1", Kind: "Binding"}
	gvkEviction = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
)

// apiPrefix returns "/api/v1" or "/apis/<group>/<version>".
func apiPrefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

// groupVersionIDs returns the operationId infix and tag of gv, e.g.
// "RbacAuthorizationV1" and "rbacAuthorization_v1" for
// rbac.authorization.k8s.io/v1, as Kubernetes names them.
func groupVersionIDs(gv schema.GroupVersion) (infix, tag string) {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	var b strings.Builder
	for _, part := range strings.Split(group, ".") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	camel := b.String()
	ver := strings.ToUpper(gv.Version[:1]) + gv.Version[1:]
	return camel + ver, strings.ToLower(camel[:1]) + camel[1:] + "_" + gv.Version
}

// opBuilder makes the operations of one path of one kind.
type opBuilder struct {
	id     string // operationId suffix, e.g. CoreV1NamespacedPod
	tag    string
	gvk    schema.GroupVersionKind
	params []param // the path's parameters
}

// op returns an operation taking the path's parameters and query.
func (b opBuilder) op(method, verb, action, what string, query []param) operation {
	params := append(append([]param{}, b.params...), query...)
	return operation{method: method, id: verb + b.id, action: action, tag: b.tag, gvk: b.gvk, description: what, params: params}
}

// takes sets the request body.
func (o operation) takes(def string, media []string) operation {
	o.body, o.bodyTypes = def, media
	return o
}

// returns sets the response; def "" is plain text.
func (o operation) returns(def string, media []string, codes ...int) operation {
	o.response, o.produces, o.codes = def, media, codes
	return o
}

// resourcePaths returns the paths that serve r, given the definition names
// of r's kind and list kind.
func resourcePaths(r *registry.Resource, kindDef, listDef string) []pathItem {
	gv := r.GVR.GroupVersion()
	infix, tag := groupVersionIDs(gv)
	coll := opBuilder{id: infix + r.Kind, tag: tag, gvk: r.GVK()}
	collection := apiPrefix(gv) + "/" + r.GVR.Resource
	if r.Namespaced {
		coll.id = infix + "Namespaced" + r.Kind
		coll.params = []param{paramNamespace}
		collection = apiPrefix(gv) + "/namespaces/{namespace}/" + r.GVR.Resource
	}
	obj := coll
	obj.params = append([]param{paramName}, coll.params...)
	item := collection + "/{name}"
	k := r.Kind
	if r.CreateOnly {
		return []pathItem{{path: collection, ops: []operation{
			coll.op("post", "create", "post", "create a "+k, writeParams).takes(kindDef, anyMedia).returns(kindDef, objectMedia, 200, 201, 202),
		}}}
	}

	paths := []pathItem{
		{path: collection, ops: []operation{
			coll.op("get", "list", "list", "list or watch objects of kind "+k, listParams).returns(listDef, listMedia, 200),
			coll.op("post", "create", "post", "create a "+k, writeParams).takes(kindDef, anyMedia).returns(kindDef, objectMedia, 200, 201, 202),
			coll.op("delete", "deletecollection", "deletecollection", "delete collection of "+k, union(deleteParams, listParams)).
				takes(defDeleteOptions, anyMedia).returns(defStatus, objectMedia, 200),
		}},
		{path: item, ops: []operation{
			obj.op("get", "read", "get", "read the specified "+k, []param{paramPretty}).returns(kindDef, objectMedia, 200),
			obj.op("put", "replace", "put", "replace the specified "+k, writeParams).takes(kindDef, anyMedia).returns(kindDef, objectMedia, 200, 201),
			obj.op("patch", "patch", "patch", "partially update the specified "+k, patchParams).takes(defPatch, patchMedia).returns(kindDef, objectMedia, 200, 201),
			obj.op("delete", "delete", "delete", "delete a "+k, deleteParams).takes(defDeleteOptions, anyMedia).returns(defStatus, objectMedia, 200, 202),
		}},
	}
	if r.Namespaced {
		all := opBuilder{id: infix + k + "ForAllNamespaces", tag: tag, gvk: r.GVK()}
		paths = append(paths, pathItem{path: apiPrefix(gv) + "/" + r.GVR.Resource, ops: []operation{
			all.op("get", "list", "list", "list or watch objects of kind "+k, listParams).returns(listDef, listMedia, 200),
		}})
	}
	for _, sub := range r.Subresources {
		b := obj
		b.id += strings.ToUpper(sub[:1]) + sub[1:]
		if ops := subresourceOps(b, sub, kindDef); ops != nil {
			paths = append(paths, pathItem{path: item + "/" + sub, ops: ops})
		}
	}
	return paths
}

// subresourceOps returns the operations of one subresource, or nil for
// subresources the documents do not describe.
func subresourceOps(b opBuilder, sub, kindDef string) []operation {
	kind := b.gvk.Kind // the resource's, before b takes the subresource's
	switch sub {
	case "status", "scale", "ephemeralcontainers":
		def := kindDef
		if sub == "scale" {
			def, b.gvk = defScale, gvkScale
		}
		return []operation{
			b.op("get", "read", "get", "read "+sub+" of the specified "+kind, []param{paramPretty}).returns(def, objectMedia, 200),
			b.op("put", "replace", "put", "replace "+sub+" of the specified "+kind, writeParams).takes(def, anyMedia).returns(def, objectMedia, 200, 201),
			b.op("patch", "patch", "patch", "partially update "+sub+" of the specified "+kind, patchParams).takes(defPatch, patchMedia).returns(def, objectMedia, 200, 201),
		}
	case "binding", "eviction":
		def, gvk := defBinding, gvkBinding
		if sub == "eviction" {
			def, gvk = defEviction, gvkEviction
		}
		b.gvk = gvk
		return []operation{
			b.op("post", "create", "post", "create "+sub+" of a "+kind, writeParams).takes(def, anyMedia).returns(def, objectMedia, 200, 201, 202),
		}
	case "finalize":
		// A namespace's spec.finalizers change only through this PUT.
		return []operation{
			b.op("put", "replace", "put", "replace "+sub+" of the specified "+kind, writeParams).takes(kindDef, anyMedia).returns(kindDef, objectMedia, 200, 201),
		}
	case "log":
		return []operation{
			b.op("get", "read", "get", "read log of the specified "+kind, logParams).returns("", logMedia, 200),
		}
	}
	return nil
}

// union returns a followed by the parameters of b not already in a.
func union(a, b []param) []param {
	out := append([]param{}, a...)
	seen := map[string]bool{}
	for _, p := range a {
		seen[p.name] = true
	}
	for _, p := range b {
		if !seen[p.name] {
			out = append(out, p)
		}
	}
	return out
}
