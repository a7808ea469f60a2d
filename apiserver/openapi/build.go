package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"cairn/apiserver/registry"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options are what the documents say besides the resources.
type Options struct {
	// Version is the Kubernetes version in the documents' info, e.g. "v1.37.2".
	Version string
}

// spec is the version-neutral model both documents are rendered from.
type spec struct {
	defs  map[string]*jsonSchema
	gvs   []schema.GroupVersion // in the order of the resources
	paths map[schema.GroupVersion][]pathItem
}

// buildSpec reflects over the resources' Go types and lays out their paths.
func buildSpec(resources []*registry.Resource) (*spec, error) {
	defs := newDefinitions()
	gvks := map[string][]schema.GroupVersionKind{}
	define := func(v any, gvk ...schema.GroupVersionKind) (string, error) {
		name, err := defs.add(reflect.TypeOf(v))
		if err != nil {
			return "", fmt.Errorf("openapi: %w", err)
		}
		for _, k := range gvk {
			if !slices.Contains(gvks[name], k) {
				gvks[name] = append(gvks[name], k)
			}
		}
		return name, nil
	}
	s := &spec{paths: map[schema.GroupVersion][]pathItem{}}
	for _, r := range resources {
		gv := r.GVR.GroupVersion()
		kindDef, err := define(r.New(), r.GVK())
		if err != nil {
			return nil, err
		}
		listDef := ""
		if !r.CreateOnly {
			if listDef, err = define(r.NewList(), gv.WithKind(r.ListKind)); err != nil {
				return nil, err
			}
		}
		if _, ok := s.paths[gv]; !ok {
			s.gvs = append(s.gvs, gv)
		}
		s.paths[gv] = append(s.paths[gv], resourcePaths(r, kindDef, listDef)...)
	}
	// The bodies of deletes and patches, and the subresources' kinds.
	v1 := schema.GroupVersion{Version: "v1"}
	deleteOptions := []schema.GroupVersionKind{}
	for _, gv := range s.gvs {
		deleteOptions = append(deleteOptions, gv.WithKind("DeleteOptions"))
	}
	for _, x := range []struct {
		v    any
		gvks []schema.GroupVersionKind
	}{
		{&metav1.Status{}, []schema.GroupVersionKind{v1.WithKind("Status")}},
		{&metav1.DeleteOptions{}, deleteOptions},
		{&metav1.Patch{}, nil},
		{&autoscalingv1.Scale{}, []schema.GroupVersionKind{gvkScale}},
		{&corev1.Binding{}, []schema.GroupVersionKind{gvkBinding}},
		{&policyv1.Eviction{}, []schema.GroupVersionKind{gvkEviction}},
	} {
		if _, err := define(x.v, x.gvks...); err != nil {
			return nil, err
		}
	}
	for name, list := range gvks {
		vals := make([]any, len(list))
		for i, k := range list {
			vals[i] = gvkValue(k)
		}
		defs.byName[name].setExtension(extGVK, vals)
	}
	merge, err := mergeSchema()
	if err != nil {
		return nil, err
	}
	addMergeMarkers(defs.byName, merge)
	s.defs = defs.byName
	return s, nil
}

// reachable returns, sorted, the definitions the paths use and those they
// use in turn.
func (s *spec) reachable(paths []pathItem) []string {
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		s.defs[name].refs(visit)
	}
	for _, p := range paths {
		for _, op := range p.ops {
			visit(op.body)
			visit(op.response)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// allPaths returns every group-version's paths.
func (s *spec) allPaths() []pathItem {
	var all []pathItem
	for _, gv := range s.gvs {
		all = append(all, s.paths[gv]...)
	}
	return all
}

// renderV2 returns the Swagger 2.0 document of every resource.
func (s *spec) renderV2(opts Options) ([]byte, error) {
	paths := s.allPaths()
	doc := map[string]any{
		"swagger":             "2.0",
		"info":                map[string]any{"title": "Kubernetes", "version": opts.Version},
		"paths":               renderPathsV2(paths),
		"definitions":         renderDefinitions(s.defs, s.reachable(paths), dialectV2),
		"securityDefinitions": securitySchemes(),
		"security":            []any{map[string]any{"BearerToken": []string{}}},
	}
	return marshal(doc)
}

// renderV3 returns the OpenAPI 3.0 document of one group-version.
func (s *spec) renderV3(gv schema.GroupVersion, opts Options) ([]byte, error) {
	paths := s.paths[gv]
	doc := map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]any{"title": "Kubernetes", "version": opts.Version},
		"paths":   renderPathsV3(paths),
		"components": map[string]any{
			"schemas":         renderDefinitions(s.defs, s.reachable(paths), dialectV3),
			"securitySchemes": securitySchemes(),
		},
		"security": []any{map[string]any{"BearerToken": []string{}}},
	}
	return marshal(doc)
}

// marshal writes JSON without HTML escaping: descriptions are full of
// '<' and '&', and clients read them verbatim.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// hashOf is the cache key of a document: it changes whenever its bytes do.
func hashOf(b []byte) string { return fmt.Sprintf("%X", sha512.Sum512(b)) }

// v3Path returns the key of gv in the v3 discovery document, e.g.
// "api/v1" or "apis/apps/v1".
func v3Path(gv schema.GroupVersion) string { return strings.TrimPrefix(apiPrefix(gv), "/") }
