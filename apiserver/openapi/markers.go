package openapi

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// The +listType, +listMapKey, +mapType and +structType markers of the
// k8s.io/api types live in comments, out of reflection's reach. Their
// effect is in the structured-merge-diff schema client-go ships for
// server-side apply (the schema this server merges applies with), which
// its applyconfigurations package exposes through a type converter. The
// documents publish them back as Kubernetes does, so that kubectl and
// other clients see the merge semantics the server uses:
//
//	associative list with keys  x-kubernetes-list-type: map, x-kubernetes-list-map-keys: keys
//	associative list, no keys   x-kubernetes-list-type: set
//	atomic list                 x-kubernetes-list-type: atomic
//	atomic struct or map        x-kubernetes-map-type: atomic
//
// Granular maps and structs, the default, are left unmarked, as
// Kubernetes leaves them.

// Extension keys of the merge markers.
const (
	extListType    = "x-kubernetes-list-type"
	extListMapKeys = "x-kubernetes-list-map-keys"
	extMapType     = "x-kubernetes-map-type"
)

// mergeSchema returns client-go's structured-merge-diff schema of the
// built-in types. Any object the converter knows gives the whole schema.
func mergeSchema() (*smdschema.Schema, error) {
	tv, err := applyconfigurations.NewTypeConverter(clientgoscheme.Scheme).ObjectToTyped(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}})
	if err != nil {
		return nil, fmt.Errorf("openapi: reading client-go's merge schema: %w", err)
	}
	return tv.Schema(), nil
}

// addMergeMarkers marks the definitions (by name) with the merge
// semantics s gives their types and fields. Definitions s does not know
// are left alone.
func addMergeMarkers(defs map[string]*jsonSchema, s *smdschema.Schema) {
	for i := range s.Types {
		td := &s.Types[i]
		def, ok := defs[td.Name]
		if !ok || td.Map == nil {
			continue
		}
		if td.Map.ElementRelationship == smdschema.Atomic {
			def.setExtension(extMapType, "atomic")
		}
		for _, f := range td.Map.Fields {
			if p, ok := def.Properties[f.Name]; ok {
				markProperty(p, f.Type)
			}
		}
	}
}

// markProperty marks a property of type ref, and the items or values
// of inline lists and maps in turn. A named type's own semantics are on
// its definition; a field may still make it atomic where it is used.
func markProperty(p *jsonSchema, ref smdschema.TypeRef) {
	if ref.NamedType != nil {
		if ref.ElementRelationship != nil && *ref.ElementRelationship == smdschema.Atomic {
			p.setExtension(extMapType, "atomic")
		}
		return
	}
	switch atom := ref.Inlined; {
	case atom.List != nil && p.Type == "array":
		l := atom.List
		switch {
		case l.ElementRelationship == smdschema.Associative && len(l.Keys) > 0:
			p.setExtension(extListType, "map")
			p.setExtension(extListMapKeys, append([]string(nil), l.Keys...))
		case l.ElementRelationship == smdschema.Associative:
			p.setExtension(extListType, "set")
		case l.ElementRelationship == smdschema.Atomic:
			p.setExtension(extListType, "atomic")
		}
		if p.Items != nil {
			markProperty(p.Items, l.ElementType)
		}
	case atom.Map != nil && p.Type == "object" && p.AdditionalProperties != nil:
		if atom.Map.ElementRelationship == smdschema.Atomic {
			p.setExtension(extMapType, "atomic")
		}
		markProperty(p.AdditionalProperties, atom.Map.ElementType)
	}
}
