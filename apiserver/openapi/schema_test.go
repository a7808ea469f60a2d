package openapi

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	coreV1 = "io.k8s.api.core.v1."
	metaV1 = "io.k8s.apimachinery.pkg.apis.meta.v1."
)

func TestPodSchema(t *testing.T) {
	doc := v3Map(t, "api/v1")
	schemas := at(t, doc, "components", "schemas")
	def := func(name string) any { return at(t, schemas, name) }
	ref := func(name string) string { return "#/components/schemas/" + name }

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"ContainersMergeOnName", at(t, def(coreV1+"PodSpec"), "properties", "containers", "x-kubernetes-patch-strategy"), "merge"},
		{"ContainersMergeKey", at(t, def(coreV1+"PodSpec"), "properties", "containers", "x-kubernetes-patch-merge-key"), "name"},
		{"ContainersAreContainers", at(t, def(coreV1+"PodSpec"), "properties", "containers", "items", "$ref"), ref(coreV1 + "Container")},
		{"VolumesRetainKeys", at(t, def(coreV1+"PodSpec"), "properties", "volumes", "x-kubernetes-patch-strategy"), "merge,retainKeys"},
		{"MetadataRefsObjectMeta", at(t, def(coreV1+"Pod"), "properties", "metadata", "allOf"), []any{map[string]any{"$ref": ref(metaV1 + "ObjectMeta")}}},
		{"PodGVK", at(t, def(coreV1+"Pod"), "x-kubernetes-group-version-kind"), []any{map[string]any{"group": "", "version": "v1", "kind": "Pod"}}},
		{"PodListGVK", at(t, def(coreV1+"PodList"), "x-kubernetes-group-version-kind"), []any{map[string]any{"group": "", "version": "v1", "kind": "PodList"}}},
		{"LimitsAreQuantities", at(t, def(coreV1+"ResourceRequirements"), "properties", "limits", "additionalProperties", "$ref"), ref("io.k8s.apimachinery.pkg.api.resource.Quantity")},
		{"QuantityIsIntOrString", at(t, def("io.k8s.apimachinery.pkg.api.resource.Quantity"), "x-kubernetes-int-or-string"), true},
		{"QuantityStringOrNumber", at(t, def("io.k8s.apimachinery.pkg.api.resource.Quantity"), "oneOf"), []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}},
		{"IntOrStringFormat", at(t, def("io.k8s.apimachinery.pkg.util.intstr.IntOrString"), "format"), "int-or-string"},
		{"IntOrStringIsIntOrString", at(t, def("io.k8s.apimachinery.pkg.util.intstr.IntOrString"), "x-kubernetes-int-or-string"), true},
		{"ProbePortIsIntOrString", at(t, def(coreV1+"HTTPGetAction"), "properties", "port", "allOf"), []any{map[string]any{"$ref": ref("io.k8s.apimachinery.pkg.util.intstr.IntOrString")}}},
		{"TimeIsDateTime", at(t, def(metaV1+"Time"), "format"), "date-time"},
		{"TimeIsString", at(t, def(metaV1+"Time"), "type"), "string"},
		{"FieldsV1PreservesUnknownFields", at(t, def(metaV1+"FieldsV1"), "x-kubernetes-preserve-unknown-fields"), true},
		{"LabelsAreStringMap", at(t, def(metaV1+"ObjectMeta"), "properties", "labels", "additionalProperties"), map[string]any{"type": "string"}},
		{"OwnerReferencesMergeOnUID", at(t, def(metaV1+"ObjectMeta"), "properties", "ownerReferences", "x-kubernetes-patch-merge-key"), "uid"},
		{"Int32", at(t, def(coreV1+"ContainerPort"), "properties", "containerPort"), map[string]any{"type": "integer", "format": "int32",
			"description": at(t, def(coreV1+"ContainerPort"), "properties", "containerPort", "description")}},
		{"Int64", at(t, def(coreV1+"PodSpec"), "properties", "activeDeadlineSeconds", "format"), "int64"},
		{"SecretDataIsBytes", at(t, def(coreV1+"Secret"), "properties", "data", "additionalProperties"), map[string]any{"type": "string", "format": "byte"}},
		{"TypeMetaInlined", at(t, def(coreV1+"Pod"), "properties", "kind", "type"), "string"},
		{"ContainerRequiresName", at(t, def(coreV1+"Container"), "required"), []any{"name"}},
		{"PodSpecRequiresContainers", at(t, def(coreV1+"PodSpec"), "required"), []any{"containers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}

	t.Run("DescriptionsPresent", func(t *testing.T) {
		for _, path := range [][]string{
			{coreV1 + "Pod", "description"},
			{coreV1 + "PodSpec", "properties", "containers", "description"},
			{coreV1 + "Container", "properties", "image", "description"},
			{metaV1 + "ObjectMeta", "properties", "name", "description"},
			{coreV1 + "Pod", "properties", "spec", "description"},
		} {
			if d, _ := at(t, schemas, path...).(string); len(d) < 10 {
				t.Errorf("%s: description %q", strings.Join(path, "."), d)
			}
		}
	})
}

// TestV2WritesRefsBesideSiblings checks the Swagger 2.0 dialect: a
// reference keeps its description and extensions next to $ref, and
// int-or-string values have a plain type, since v2 has no oneOf.
func TestV2WritesRefsBesideSiblings(t *testing.T) {
	tests := []struct {
		name string
		in   *jsonSchema
		want map[string]any
	}{
		{"RefWithDescription", &jsonSchema{Ref: "a.B", Description: "d"}, map[string]any{"$ref": "#/definitions/a.B", "description": "d"}},
		{"OneOfAsType", &jsonSchema{Type: "string", OneOfTypes: []string{"string", "number"}}, map[string]any{"type": "string"}},
		{"Extensions", &jsonSchema{Type: "array", Items: &jsonSchema{Ref: "a.B"}, Extensions: map[string]any{extPatchStrategy: "merge"}},
			map[string]any{"type": "array", "items": map[string]any{"$ref": "#/definitions/a.B"}, extPatchStrategy: "merge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dialectV2.render(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestModelNames(t *testing.T) {
	type local struct{}
	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"OwnName", reflect.TypeFor[corev1.Pod](), "io.k8s.api.core.v1.Pod"},
		{"FromPackagePath", reflect.TypeFor[local](), "cairn.apiserver.openapi.local"},
		{"HostReversed", reflect.TypeFor[schema.GroupVersionKind](), "io.k8s.apimachinery.pkg.runtime.schema.GroupVersionKind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := modelName(tt.typ); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
