// Package openapi builds the OpenAPI documents the API server publishes:
// Swagger 2.0 at /openapi/v2 and one OpenAPI 3.0 document per group-version
// under /openapi/v3. kubectl needs them: `kubectl apply` reads the patch
// operations to learn that the server validates fields itself, computes
// strategic merge patches from the x-kubernetes-patch-* extensions, and
// `kubectl explain` prints the descriptions.
//
// The schemas are derived by reflection from the k8s.io/api Go types of the
// served resources: JSON tags give the properties, the types' SwaggerDoc
// methods the descriptions, patchStrategy/patchMergeKey tags the patch
// extensions, and client-go's server-side apply schema the list and map
// merge markers (x-kubernetes-list-type and friends). The documents are built once and served from memory; their
// bytes depend only on the resources, so every replica serves identical
// documents under identical hashes.
package openapi
