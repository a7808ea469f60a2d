package apiserver

import (
	"net/http/httptest"
	"testing"
)

func TestParseRequestInfo(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         requestInfo
		ok           bool
	}{
		{"GET", "/api/v1/namespaces/default/pods", requestInfo{Verb: "list", Version: "v1", Namespace: "default", Resource: "pods"}, true},
		{"GET", "/api/v1/namespaces/default/pods/web", requestInfo{Verb: "get", Version: "v1", Namespace: "default", Resource: "pods", Name: "web"}, true},
		{"PUT", "/api/v1/namespaces/default/pods/web/status", requestInfo{Verb: "update", Version: "v1", Namespace: "default", Resource: "pods", Name: "web", Subresource: "status"}, true},
		{"GET", "/api/v1/pods?watch=true", requestInfo{Verb: "watch", Version: "v1", Resource: "pods"}, true},
		{"GET", "/api/v1/watch/namespaces/kube-system/pods", requestInfo{Verb: "watch", Version: "v1", Namespace: "kube-system", Resource: "pods"}, true},
		{"GET", "/api/v1/namespaces", requestInfo{Verb: "list", Version: "v1", Resource: "namespaces"}, true},
		{"GET", "/api/v1/namespaces/kube-system", requestInfo{Verb: "get", Version: "v1", Resource: "namespaces", Name: "kube-system"}, true},
		{"PUT", "/api/v1/namespaces/kube-system/status", requestInfo{Verb: "update", Version: "v1", Resource: "namespaces", Name: "kube-system", Subresource: "status"}, true},
		{"PUT", "/api/v1/namespaces/kube-system/finalize", requestInfo{Verb: "update", Version: "v1", Resource: "namespaces", Name: "kube-system", Subresource: "finalize"}, true},
		{"POST", "/apis/apps/v1/namespaces/default/deployments", requestInfo{Verb: "create", Group: "apps", Version: "v1", Namespace: "default", Resource: "deployments"}, true},
		{"PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", requestInfo{Verb: "patch", Group: "apps", Version: "v1", Namespace: "default", Resource: "deployments", Name: "web", Subresource: "scale"}, true},
		{"DELETE", "/api/v1/namespaces/default/configmaps", requestInfo{Verb: "deletecollection", Version: "v1", Namespace: "default", Resource: "configmaps"}, true},
		{"DELETE", "/api/v1/nodes/n1", requestInfo{Verb: "delete", Version: "v1", Resource: "nodes", Name: "n1"}, true},
		{"GET", "/api/v1", requestInfo{}, false},
		{"GET", "/apis/apps/v1", requestInfo{}, false},
		{"GET", "/healthz", requestInfo{}, false},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			got, ok := parseRequestInfo(httptest.NewRequest(tc.method, tc.path, nil))
			if ok != tc.ok || (ok && got != tc.want) {
				t.Fatalf("got %+v ok=%v, want %+v ok=%v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
