package openapi

import (
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// gvkValue is the JSON form of x-kubernetes-group-version-kind entries.
func gvkValue(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// renderPathsV2 renders paths as Swagger 2.0 path items.
func renderPathsV2(paths []pathItem) map[string]any {
	d := dialectV2
	out := map[string]any{}
	for _, p := range paths {
		item := map[string]any{}
		for _, op := range p.ops {
			params := []any{}
			for _, pa := range op.params {
				v := map[string]any{"name": pa.name, "in": pa.in, "type": pa.typ, "description": pa.description, "uniqueItems": true}
				if pa.required {
					v["required"] = true
				}
				params = append(params, v)
			}
			o := map[string]any{
				"description": op.description, "operationId": op.id, "tags": []string{op.tag},
				"schemes": []string{"https"}, "produces": op.produces,
				extAction: op.action, extGVK: gvkValue(op.gvk),
			}
			if op.body != "" {
				params = append(params, map[string]any{"name": "body", "in": "body", "required": op.bodyRequired(), "schema": d.ref(op.body)})
				o["consumes"] = op.bodyTypes
			}
			o["parameters"] = params
			responses := map[string]any{"401": map[string]any{"description": "Unauthorized"}}
			for _, code := range op.codes {
				resp := map[string]any{"description": http.StatusText(code)}
				if op.response != "" {
					resp["schema"] = d.ref(op.response)
				} else {
					resp["schema"] = map[string]any{"type": "string"}
				}
				responses[strconv.Itoa(code)] = resp
			}
			o["responses"] = responses
			item[op.method] = o
		}
		out[p.path] = item
	}
	return out
}

// renderPathsV3 renders paths as OpenAPI 3.0 path items.
func renderPathsV3(paths []pathItem) map[string]any {
	d := dialectV3
	out := map[string]any{}
	for _, p := range paths {
		item := map[string]any{}
		for _, op := range p.ops {
			params := []any{}
			for _, pa := range op.params {
				v := map[string]any{"name": pa.name, "in": pa.in, "description": pa.description,
					"schema": map[string]any{"type": pa.typ, "uniqueItems": true}}
				if pa.required {
					v["required"] = true
				}
				params = append(params, v)
			}
			o := map[string]any{
				"description": op.description, "operationId": op.id, "tags": []string{op.tag},
				"parameters": params, extAction: op.action, extGVK: gvkValue(op.gvk),
			}
			if op.body != "" {
				content := map[string]any{}
				for _, mt := range op.bodyTypes {
					content[mt] = map[string]any{"schema": d.ref(op.body)}
				}
				body := map[string]any{"content": content}
				if op.bodyRequired() {
					body["required"] = true
				}
				o["requestBody"] = body
			}
			responses := map[string]any{"401": map[string]any{"description": "Unauthorized"}}
			for _, code := range op.codes {
				content := map[string]any{}
				for _, mt := range op.produces {
					if op.response != "" {
						content[mt] = map[string]any{"schema": d.ref(op.response)}
					} else {
						content[mt] = map[string]any{"schema": map[string]any{"type": "string"}}
					}
				}
				responses[strconv.Itoa(code)] = map[string]any{"description": http.StatusText(code), "content": content}
			}
			o["responses"] = responses
			item[op.method] = o
		}
		out[p.path] = item
	}
	return out
}

// bodyRequired reports whether the request must carry a body: all do but
// deletes, whose options are optional.
func (op operation) bodyRequired() bool { return op.method != "delete" }

// renderDefinitions renders the named definitions in dialect d.
func renderDefinitions(defs map[string]*jsonSchema, names []string, d dialect) map[string]any {
	out := make(map[string]any, len(names))
	for _, n := range names {
		out[n] = d.render(defs[n])
	}
	return out
}

// securitySchemes says that requests may carry a bearer token; client
// certificates, the other way to authenticate, have no OpenAPI form.
func securitySchemes() map[string]any {
	return map[string]any{"BearerToken": map[string]any{"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}}
}
