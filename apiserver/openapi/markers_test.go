package openapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestMergeMarkers checks the list and map merge markers against what
// Kubernetes publishes for the same fields, in both documents.
func TestMergeMarkers(t *testing.T) {
	v2 := map[string]any{}
	if err := json.Unmarshal(docs(t).v2JSON, &v2); err != nil {
		t.Fatal(err)
	}
	documents := []struct {
		name    string
		schemas any
	}{
		{"v2", at(t, v2, "definitions")},
		{"v3", at(t, v3Map(t, "api/v1"), "components", "schemas")},
	}
	tests := []struct {
		name string
		path []string
		want map[string]any // the x-kubernetes-list-* and -map-type keys
	}{
		{"ContainersAreAMapByName", []string{coreV1 + "PodSpec", "properties", "containers"},
			map[string]any{extListType: "map", extListMapKeys: []any{"name"}}},
		{"PortsKeyedByPortAndProtocol", []string{coreV1 + "Container", "properties", "ports"},
			map[string]any{extListType: "map", extListMapKeys: []any{"containerPort", "protocol"}}},
		{"ArgsAreAtomic", []string{coreV1 + "Container", "properties", "args"}, map[string]any{extListType: "atomic"}},
		{"FinalizersAreASet", []string{metaV1 + "ObjectMeta", "properties", "finalizers"}, map[string]any{extListType: "set"}},
		{"OwnerReferencesByUID", []string{metaV1 + "ObjectMeta", "properties", "ownerReferences"},
			map[string]any{extListType: "map", extListMapKeys: []any{"uid"}}},
		{"LabelsAreGranular", []string{metaV1 + "ObjectMeta", "properties", "labels"}, map[string]any{}},
		{"NodeSelectorIsAtomic", []string{coreV1 + "PodSpec", "properties", "nodeSelector"}, map[string]any{extMapType: "atomic"}},
		{"LocalObjectReferenceIsAtomic", []string{coreV1 + "LocalObjectReference"}, map[string]any{extMapType: "atomic"}},
		{"PodSpecIsGranular", []string{coreV1 + "PodSpec"}, map[string]any{}},
	}
	for _, d := range documents {
		for _, tt := range tests {
			t.Run(d.name+"/"+tt.name, func(t *testing.T) {
				got := map[string]any{}
				for k, v := range at(t, d.schemas, tt.path...).(map[string]any) {
					if k == extListType || k == extListMapKeys || k == extMapType {
						got[k] = v
					}
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("markers %v, want %v", got, tt.want)
				}
			})
		}
	}
}
