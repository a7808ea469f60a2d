package openapi

import (
	"encoding/json"
	"sync"
	"testing"

	"cairn/apiserver/registry"
)

// testDocuments builds the documents of every served resource once per
// test binary: each test only reads them.
var testDocuments = sync.OnceValues(func() (*Documents, error) {
	return Build(registry.All(), Options{Version: "v1.37.2"})
})

func docs(t *testing.T) *Documents {
	t.Helper()
	d, err := testDocuments()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// v3Map returns the v3 document of a group-version as generic JSON.
func v3Map(t *testing.T, path string) map[string]any {
	t.Helper()
	b, _, ok := docs(t).V3(path)
	if !ok {
		t.Fatalf("no v3 document for %s", path)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a generic JSON tree by keys; it fails the test on a missing key.
func at(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for i, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: not an object at %q", keys[:i], k)
		}
		if v, ok = m[k]; !ok {
			t.Fatalf("%v: no key %q", keys[:i], k)
		}
	}
	return v
}
