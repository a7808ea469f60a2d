package openapi

import (
	"reflect"
	"slices"
	"strings"
)

// modelNamer is implemented by the k8s.io/api and apimachinery types, which
// know the name Kubernetes publishes them under.
type modelNamer interface{ OpenAPIModelName() string }

// modelName returns the definition name of a named Go type, e.g.
// "io.k8s.api.core.v1.Pod" for k8s.io/api/core/v1.Pod. Types that do not
// say their name get one built the same way: the package path with its
// host reversed, then the type name.
func modelName(t reflect.Type) string {
	if n, ok := reflect.Zero(t).Interface().(modelNamer); ok {
		return n.OpenAPIModelName()
	}
	parts := strings.Split(t.PkgPath(), "/")
	host := strings.Split(parts[0], ".")
	slices.Reverse(host)
	return strings.Join(append(append(host, parts[1:]...), t.Name()), ".")
}

// swaggerDocs returns the descriptions k8s.io/api generates for a type:
// "" describes the type, other keys its JSON fields.
func swaggerDocs(t reflect.Type) map[string]string {
	if d, ok := reflect.Zero(t).Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return d.SwaggerDoc()
	}
	return nil
}
