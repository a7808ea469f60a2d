package openapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServe(t *testing.T) {
	d := docs(t)
	appsDoc, appsHash, _ := d.V3("apis/apps/v1")
	v2Proto, err := d.V2Protobuf()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		method      string
		target      string
		header      http.Header
		wantCode    int
		wantType    string
		wantBody    []byte
		wantCaching string
	}{
		{name: "V3Index", target: "/openapi/v3", wantCode: 200, wantType: "application/json", wantBody: d.V3Discovery(), wantCaching: "no-cache, private"},
		{name: "V3DocumentWithHashIsImmutable", target: "/openapi/v3/apis/apps/v1?hash=" + appsHash, wantCode: 200, wantType: "application/json", wantBody: appsDoc, wantCaching: "public, immutable"},
		{name: "V3DocumentWithOldHash", target: "/openapi/v3/apis/apps/v1?hash=0", wantCode: 200, wantBody: appsDoc, wantCaching: "no-cache, private"},
		{name: "V3NotModified", target: "/openapi/v3/apis/apps/v1", header: http.Header{"If-None-Match": {`"` + appsHash + `"`}}, wantCode: 304},
		{name: "V3UnknownGroupVersion", target: "/openapi/v3/apis/nope/v1", wantCode: 404},
		{name: "V3ProtobufNotServed", target: "/openapi/v3/api/v1", header: http.Header{"Accept": {"application/com.github.proto-openapi.spec.v3@v1.0+protobuf"}}, wantCode: 406},
		{name: "V2JSON", target: "/openapi/v2", header: http.Header{"Accept": {"application/json, */*"}}, wantCode: 200, wantType: "application/json", wantBody: d.V2JSON()},
		{name: "V2Protobuf", target: "/openapi/v2", header: http.Header{"Accept": {MediaProtobufV2}}, wantCode: 200, wantType: MediaProtobufV2, wantBody: v2Proto},
		{name: "V2ProtobufAsClientGoAsks", target: "/openapi/v2", header: http.Header{"Accept": {mediaProtobufV2Request}}, wantCode: 200, wantType: MediaProtobufV2, wantBody: v2Proto},
		{name: "V2Unacceptable", target: "/openapi/v2", header: http.Header{"Accept": {"text/html"}}, wantCode: 406},
		{name: "ReadOnly", method: "POST", target: "/openapi/v2", wantCode: 405},
		{name: "Head", method: "HEAD", target: "/openapi/v3", wantCode: 200, wantBody: []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			r := httptest.NewRequest(method, tt.target, nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			w := httptest.NewRecorder()
			if !d.Serve(w, r) {
				t.Fatal("not served")
			}
			if w.Code != tt.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, tt.wantCode, w.Body.String())
			}
			if tt.wantType != "" && w.Header().Get("Content-Type") != tt.wantType {
				t.Errorf("Content-Type %q, want %q", w.Header().Get("Content-Type"), tt.wantType)
			}
			if tt.wantBody != nil && !bytes.Equal(w.Body.Bytes(), tt.wantBody) {
				t.Errorf("body of %d bytes, want %d", w.Body.Len(), len(tt.wantBody))
			}
			if tt.wantCaching != "" && w.Header().Get("Cache-Control") != tt.wantCaching {
				t.Errorf("Cache-Control %q, want %q", w.Header().Get("Cache-Control"), tt.wantCaching)
			}
		})
	}

	t.Run("OtherPathsPassThrough", func(t *testing.T) {
		for _, p := range []string{"/api/v1", "/openapi", "/openapi/v22", "/version"} {
			w := httptest.NewRecorder()
			if d.Serve(w, httptest.NewRequest("GET", p, nil)) {
				t.Errorf("%s was served", p)
			}
		}
	})

	t.Run("IndexLinksEveryDocument", func(t *testing.T) {
		var index v3DiscoveryDoc
		if err := json.Unmarshal(d.V3Discovery(), &index); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1", "apis/discovery.k8s.io/v1", "apis/rbac.authorization.k8s.io/v1"} {
			entry, ok := index.Paths[key]
			if !ok {
				t.Errorf("%s missing from the index", key)
				continue
			}
			w := httptest.NewRecorder()
			d.Serve(w, httptest.NewRequest("GET", entry.ServerRelativeURL, nil))
			if w.Code != 200 || w.Header().Get("Cache-Control") != "public, immutable" {
				t.Errorf("%s: %d %q", entry.ServerRelativeURL, w.Code, w.Header().Get("Cache-Control"))
			}
		}
	})
}
