package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Interfaces by which apimachinery types with a custom JSON form (Time,
// Quantity, IntOrString, Duration) describe that form.
type (
	schemaTyper     interface{ OpenAPISchemaType() []string }
	schemaFormatter interface{ OpenAPISchemaFormat() string }
	oneOfTyper      interface{ OpenAPIV3OneOfTypes() []string }
)

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	byteSlice     = reflect.TypeFor[[]byte]()
)

// definitions collects the schema of every struct type reachable from the
// types it is asked about, keyed by definition name.
type definitions struct {
	byName map[string]*jsonSchema
	types  map[string]reflect.Type // guards against two Go types sharing a name
}

func newDefinitions() *definitions {
	return &definitions{byName: map[string]*jsonSchema{}, types: map[string]reflect.Type{}}
}

// add defines t (a struct type) and everything it refers to, and returns
// its definition name. Its errors name the field path to what could not be
// described; the caller adds the package prefix.
func (d *definitions) add(t reflect.Type) (string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Name() == "" {
		return "", fmt.Errorf("%v is not a named struct type", t)
	}
	name := modelName(t)
	if seen, ok := d.types[name]; ok {
		if seen != t {
			return "", fmt.Errorf("%v and %v are both named %s", seen, t, name)
		}
		return name, nil
	}
	// Registered before the fields are walked, so that recursive types
	// (JSONSchemaProps-like) end in a reference instead of looping.
	d.types[name] = t
	s, err := d.structSchema(t)
	if err != nil {
		return "", err
	}
	d.byName[name] = s
	return name, nil
}

// structSchema describes a struct: a custom JSON form if it has one, its
// fields otherwise.
func (d *definitions) structSchema(t reflect.Type) (*jsonSchema, error) {
	docs := swaggerDocs(t)
	s := &jsonSchema{Description: docs[""]}
	zero := reflect.Zero(t).Interface()
	if typer, ok := zero.(schemaTyper); ok {
		if types := typer.OpenAPISchemaType(); len(types) > 0 {
			s.Type = types[0]
		}
		if f, ok := zero.(schemaFormatter); ok {
			s.Format = f.OpenAPISchemaFormat()
		}
		if o, ok := zero.(oneOfTyper); ok {
			s.OneOfTypes = o.OpenAPIV3OneOfTypes()
			// A number-or-string (quantities, IntOrString) is what
			// structural schemas call int-or-string.
			s.Extensions = map[string]any{extIntOrString: true}
		}
		return s, nil
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		// RawExtension, FieldsV1: arbitrary JSON the types do not describe.
		s.Type = "object"
		s.Extensions = map[string]any{extPreserveUnknownFields: true}
		return s, nil
	}
	s.Type = "object"
	s.Properties = map[string]*jsonSchema{}
	if err := d.addFields(s, t, docs); err != nil {
		return nil, err
	}
	return s, nil
}

// addFields adds t's JSON fields to s, flattening inlined structs (TypeMeta,
// VolumeSource) as encoding/json does.
func (d *definitions) addFields(s *jsonSchema, t reflect.Type, docs map[string]string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && name == "")
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := d.addFields(s, ft, swaggerDocs(ft)); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p, err := d.schemaOf(f.Type)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		p.Description = docs[name]
		if v := f.Tag.Get("patchStrategy"); v != "" {
			p.setExtension(extPatchStrategy, v)
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			p.setExtension(extPatchMergeKey, v)
		}
		s.Properties[name] = p
		if required(f.Type, opts) {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

// required follows Kubernetes' generator, which makes a field required
// unless it has omitempty or an "+optional" comment. Comments are out of
// reflection's reach; a pointer without omitempty stands in for them, as
// the API conventions make optional fields pointers.
func required(t reflect.Type, jsonOpts string) bool {
	for _, o := range strings.Split(jsonOpts, ",") {
		if o == "omitempty" || o == "omitzero" {
			return false
		}
	}
	return t.Kind() != reflect.Pointer
}

func (s *jsonSchema) setExtension(k string, v any) {
	if s.Extensions == nil {
		s.Extensions = map[string]any{}
	}
	s.Extensions[k] = v
}

// schemaOf returns the schema of a field of type t: a reference for named
// structs, an inline schema for everything else.
func (d *definitions) schemaOf(t reflect.Type) (*jsonSchema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == byteSlice || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8) {
		return &jsonSchema{Type: "string", Format: "byte"}, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		name, err := d.add(t)
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Ref: name}, nil
	case reflect.String:
		return &jsonSchema{Type: "string"}, nil
	case reflect.Bool:
		return &jsonSchema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint8, reflect.Uint16:
		return &jsonSchema{Type: "integer", Format: "int32"}, nil
	case reflect.Int64, reflect.Uint32, reflect.Uint64:
		return &jsonSchema{Type: "integer", Format: "int64"}, nil
	case reflect.Float32:
		return &jsonSchema{Type: "number", Format: "float"}, nil
	case reflect.Float64:
		return &jsonSchema{Type: "number", Format: "double"}, nil
	case reflect.Slice, reflect.Array:
		items, err := d.schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Type: "array", Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key %v is not a string", t.Key())
		}
		values, err := d.schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Type: "object", AdditionalProperties: values}, nil
	case reflect.Interface:
		return &jsonSchema{Type: "object", Extensions: map[string]any{extPreserveUnknownFields: true}}, nil
	}
	return nil, fmt.Errorf("cannot describe %v", t)
}
