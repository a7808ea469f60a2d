package openapi

// jsonSchema is the schema of a definition or a property, in the subset of
// JSON Schema that Kubernetes publishes. It is neutral between OpenAPI v2
// and v3: Ref names a definition rather than holding a JSON pointer, and
// the renderers write it the way each version expects.
type jsonSchema struct {
	// Ref is the name of a definition, e.g. "io.k8s.api.core.v1.PodSpec".
	Ref         string
	Description string
	Type        string
	Format      string
	Required    []string
	Properties  map[string]*jsonSchema
	// AdditionalProperties is the schema of a map's values.
	AdditionalProperties *jsonSchema
	Items                *jsonSchema
	// OneOfTypes lists the JSON types a value may take when it has no
	// single one (quantities, int-or-string); OpenAPI v2 cannot say it and
	// uses Type instead.
	OneOfTypes []string
	// Extensions are the x-kubernetes-* keys.
	Extensions map[string]any
}

// Extension keys Kubernetes clients read.
const (
	extGVK                   = "x-kubernetes-group-version-kind"
	extPatchStrategy         = "x-kubernetes-patch-strategy"
	extPatchMergeKey         = "x-kubernetes-patch-merge-key"
	extIntOrString           = "x-kubernetes-int-or-string"
	extPreserveUnknownFields = "x-kubernetes-preserve-unknown-fields"
	extAction                = "x-kubernetes-action"
)

// dialect is how a document version writes references.
type dialect struct {
	refPrefix string
	// wrapRefs puts a reference that has siblings (description,
	// extensions) inside allOf, as OpenAPI v3 requires; v2 writes the
	// siblings next to $ref, as Kubernetes does.
	wrapRefs bool
	// oneOf writes OneOfTypes as oneOf; v2 has no oneOf.
	oneOf bool
}

var (
	dialectV2 = dialect{refPrefix: "#/definitions/"}
	dialectV3 = dialect{refPrefix: "#/components/schemas/", wrapRefs: true, oneOf: true}
)

// ref returns the JSON reference to definition name.
func (d dialect) ref(name string) map[string]any {
	return map[string]any{"$ref": d.refPrefix + name}
}

// render turns s into the JSON tree of d. Maps are used throughout so that
// encoding/json writes keys in sorted order and the bytes are stable.
func (d dialect) render(s *jsonSchema) map[string]any {
	out := map[string]any{}
	if s.Description != "" {
		out["description"] = s.Description
	}
	for k, v := range s.Extensions {
		out[k] = v
	}
	if s.Ref != "" {
		if d.wrapRefs && len(out) > 0 {
			out["allOf"] = []any{d.ref(s.Ref)}
		} else {
			out["$ref"] = d.refPrefix + s.Ref
		}
		return out
	}
	if len(s.OneOfTypes) > 0 && d.oneOf {
		alts := make([]any, len(s.OneOfTypes))
		for i, t := range s.OneOfTypes {
			alts[i] = map[string]any{"type": t}
		}
		out["oneOf"] = alts
	} else if s.Type != "" {
		out["type"] = s.Type
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if len(s.Required) > 0 {
		out["required"] = s.Required
	}
	if len(s.Properties) > 0 {
		props := make(map[string]any, len(s.Properties))
		for name, p := range s.Properties {
			props[name] = d.render(p)
		}
		out["properties"] = props
	}
	if s.AdditionalProperties != nil {
		out["additionalProperties"] = d.render(s.AdditionalProperties)
	}
	if s.Items != nil {
		out["items"] = d.render(s.Items)
	}
	return out
}

// refs calls fn with the name of every definition s refers to directly.
func (s *jsonSchema) refs(fn func(name string)) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		fn(s.Ref)
	}
	for _, p := range s.Properties {
		p.refs(fn)
	}
	s.AdditionalProperties.refs(fn)
	s.Items.refs(fn)
}
