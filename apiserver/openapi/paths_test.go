package openapi

import (
	"reflect"
	"testing"
)

func TestPaths(t *testing.T) {
	tests := []struct {
		name   string
		doc    string
		path   string
		method string
		wantID string
		gvk    map[string]any
	}{
		{"NamespacedList", "api/v1", "/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod", map[string]any{"group": "", "version": "v1", "kind": "Pod"}},
		{"ListAllNamespaces", "api/v1", "/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", map[string]any{"group": "", "version": "v1", "kind": "Pod"}},
		{"ClusterScopedRead", "api/v1", "/api/v1/nodes/{name}", "get", "readCoreV1Node", map[string]any{"group": "", "version": "v1", "kind": "Node"}},
		{"StatusPatch", "api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", "patchCoreV1NamespacedPodStatus", map[string]any{"group": "", "version": "v1", "kind": "Pod"}},
		{"EphemeralContainers", "api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers", "patch", "patchCoreV1NamespacedPodEphemeralcontainers", map[string]any{"group": "", "version": "v1", "kind": "Pod"}},
		{"Binding", "api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/binding", "post", "createCoreV1NamespacedPodBinding", map[string]any{"group": "", "version": "v1", "kind": "Binding"}},
		{"Eviction", "api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/eviction", "post", "createCoreV1NamespacedPodEviction", map[string]any{"group": "policy", "version": "v1", "kind": "Eviction"}},
		{"Log", "api/v1", "/api/v1/namespaces/{namespace}/pods/{name}/log", "get", "readCoreV1NamespacedPodLog", map[string]any{"group": "", "version": "v1", "kind": "Pod"}},
		{"Scale", "apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "put", "replaceAppsV1NamespacedDeploymentScale", map[string]any{"group": "autoscaling", "version": "v1", "kind": "Scale"}},
		{"DottedGroup", "apis/rbac.authorization.k8s.io/v1", "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", "delete", "deleteRbacAuthorizationV1ClusterRole", map[string]any{"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole"}},
		{"NamespaceFinalize", "api/v1", "/api/v1/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", map[string]any{"group": "", "version": "v1", "kind": "Namespace"}},
		{"ControllerRevisions", "apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/controllerrevisions/{name}", "get", "readAppsV1NamespacedControllerRevision", map[string]any{"group": "apps", "version": "v1", "kind": "ControllerRevision"}},
		{"DeleteCollection", "apis/batch/v1", "/apis/batch/v1/namespaces/{namespace}/jobs", "delete", "deletecollectionBatchV1NamespacedJob", map[string]any{"group": "batch", "version": "v1", "kind": "Job"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := at(t, v3Map(t, tt.doc), "paths", tt.path, tt.method)
			if id := at(t, op, "operationId"); id != tt.wantID {
				t.Errorf("operationId %v, want %s", id, tt.wantID)
			}
			if gvk := at(t, op, extGVK); !reflect.DeepEqual(gvk, tt.gvk) {
				t.Errorf("%s %v, want %v", extGVK, gvk, tt.gvk)
			}
		})
	}

	t.Run("DocumentsHoldOnlyTheirGroupVersion", func(t *testing.T) {
		paths := at(t, v3Map(t, "apis/apps/v1"), "paths").(map[string]any)
		for p := range paths {
			if len(p) < len("/apis/apps/v1/") || p[:len("/apis/apps/v1/")] != "/apis/apps/v1/" {
				t.Errorf("apps/v1 document has %s", p)
			}
		}
		schemas := at(t, v3Map(t, "apis/apps/v1"), "components", "schemas").(map[string]any)
		if _, ok := schemas["io.k8s.api.batch.v1.Job"]; ok {
			t.Error("apps/v1 document defines batch/v1 Job")
		}
		if _, ok := schemas["io.k8s.api.autoscaling.v1.Scale"]; !ok {
			t.Error("apps/v1 document lacks the Scale its scale subresources use")
		}
	})
}
