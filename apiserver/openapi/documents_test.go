package openapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"cairn/apiserver/registry"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/kube-openapi/pkg/spec3"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
)

// parseV3 decodes a group-version's document with the types kubectl uses.
func parseV3(t *testing.T, path string) *spec3.OpenAPI {
	t.Helper()
	b, _, ok := docs(t).V3(path)
	if !ok {
		t.Fatalf("no v3 document for %s", path)
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &doc
}

// TestWritesDeclareFieldValidation checks what kubectl looks for before it
// leaves validation to the server: every write of every served kind takes
// fieldValidation, dryRun and fieldManager, and each PATCH names its kind
// and accepts strategic merge patches.
func TestWritesDeclareFieldValidation(t *testing.T) {
	var index v3DiscoveryDoc
	if err := json.Unmarshal(docs(t).V3Discovery(), &index); err != nil {
		t.Fatal(err)
	}
	patched := map[schema.GroupVersionKind]bool{}
	for key := range index.Paths {
		t.Run(key, func(t *testing.T) {
			doc := parseV3(t, key)
			for path, item := range doc.Paths.Paths {
				for method, op := range map[string]*spec3.Operation{"post": item.Post, "put": item.Put, "patch": item.Patch} {
					if op == nil {
						continue
					}
					var names []string
					for _, p := range op.Parameters {
						if p.In == "query" {
							names = append(names, p.Name)
						}
					}
					for _, want := range []string{"fieldValidation", "dryRun", "fieldManager"} {
						if !slices.Contains(names, want) {
							t.Errorf("%s %s: no %s parameter in %v", method, path, want, names)
						}
					}
					var gvk map[string]string
					if err := op.Extensions.GetObject(extGVK, &gvk); err != nil || gvk["kind"] == "" {
						t.Errorf("%s %s: no %s: %v", method, path, extGVK, err)
					}
					if method == "patch" {
						if _, ok := op.RequestBody.Content["application/strategic-merge-patch+json"]; !ok {
							t.Errorf("patch %s: strategic merge patch not accepted", path)
						}
						patched[schema.GroupVersionKind{Group: gvk["group"], Version: gvk["version"], Kind: gvk["kind"]}] = true
					}
				}
			}
		})
	}
	for _, r := range registry.All() {
		if !patched[r.GVK()] {
			t.Errorf("%v has no PATCH operation", r.GVK())
		}
	}
}

// TestApplyPatchFromV3 computes the three-way patch `kubectl apply` sends,
// from the published v3 schema: a changed image must merge into the
// container of the same name instead of replacing the whole list.
func TestApplyPatchFromV3(t *testing.T) {
	doc := parseV3(t, "apis/apps/v1")
	var kind *strategicpatch.PatchMetaFromOpenAPIV3
	for _, s := range doc.Components.Schemas {
		var gvks []map[string]string
		if s.Extensions.GetObject(extGVK, &gvks) == nil && len(gvks) == 1 && gvks[0]["kind"] == "Deployment" {
			kind = &strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: doc.Components.Schemas}
		}
	}
	if kind == nil {
		t.Fatal("no schema carries the Deployment kind")
	}
	deployment := func(image string, sidecar bool) []byte {
		d := appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: image}}
		if sidecar {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar:1"})
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The live object has a container another client added; the patch
	// must leave it alone.
	patch, err := strategicpatch.CreateThreeWayMergePatch(deployment("web:1", false), deployment("web:2", false), deployment("web:1", true), kind, false)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	podSpec := at(t, got, "spec", "template", "spec")
	if containers, want := at(t, podSpec, "containers"), []any{map[string]any{"name": "web", "image": "web:2"}}; !jsonEqual(containers, want) {
		t.Fatalf("patch %s: containers %v, want %v", patch, containers, want)
	}
	// Only a merge by name writes the order directive; a list replaced
	// whole would drop the sidecar.
	if order, want := at(t, podSpec, "$setElementOrder/containers"), []any{map[string]any{"name": "web"}}; !jsonEqual(order, want) {
		t.Fatalf("patch %s: element order %v, want %v", patch, order, want)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestV2ProtobufReadsInKubectl decodes /openapi/v2 as client-go and kubectl
// do when they fall back from v3.
func TestV2ProtobufReadsInKubectl(t *testing.T) {
	b, err := docs(t).V2Protobuf()
	if err != nil {
		t.Fatal(err)
	}
	var doc openapiv2.Document
	if err := proto.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	resources, err := kubectlopenapi.NewOpenAPIData(&doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range registry.All() {
		t.Run(r.GVK().String(), func(t *testing.T) {
			if resources.LookupResource(r.GVK()) == nil {
				t.Fatal("kind not found")
			}
			if consumes := resources.GetConsumes(r.GVK(), "PATCH"); !slices.Contains(consumes, "application/strategic-merge-patch+json") {
				t.Fatalf("PATCH consumes %v", consumes)
			}
		})
	}
}

// TestDocumentsAreStable checks that building twice yields the same bytes,
// so every replica serves the same hashes and client caches stay valid.
func TestDocumentsAreStable(t *testing.T) {
	again, err := Build(registry.All(), Options{Version: "v1.37.2"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.V3Discovery(), docs(t).V3Discovery()) || !bytes.Equal(again.V2JSON(), docs(t).V2JSON()) {
		t.Fatal("documents differ between two builds")
	}
}
