package helper

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/node/runtime/embedded/shimtest"
)

// TestTheShimReadsSpecsAsGoDoes runs the C shim on hand-written
// spec.json files and checks that it reads them as Go's encoding/json
// does. The shim fails each start at the first step that needs no
// privilege, opening the container's cgroup, whose error names the
// cgroup path it read: escapes, surrogate pairs, nested values in fields
// it does not know, and duplicate keys must come out as in Go.
func TestTheShimReadsSpecsAsGoDoes(t *testing.T) {
	shim := shimtest.Binary(t)
	start := func(t *testing.T, spec string) error {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "spec.json"), []byte(spec), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := StartShim(ctx, shim, dir)
		if err == nil {
			t.Fatal("the shim started a container without privileges")
		}
		return err
	}
	for _, tc := range []struct {
		name, spec string
	}{
		{"escapes", `{"args":["sh"],"cgroups":{"v2":"/nonexistent/q\"b\\s\/t\tn\nu\u00e9\u0041"}}`},
		{"a surrogate pair and raw UTF-8", `{"args":["sh"],"cgroups":{"v2":"/nonexistent/\ud83d\ude00-é-日本"}}`},
		{"a lone surrogate", `{"args":["sh"],"cgroups":{"v2":"/nonexistent/\ud800x\udc00"}}`},
		{"nested unknown fields", `{"extra":[[1,[2.5e3,{"x":[[],{}]}]],null,true,"s"],"args":["sh","-c","x"],
			"env":["A=\u0042"],"cgroups":{"v1":{"unknown":"/u"},"v2":"/nonexistent/nested"}}`},
		{"duplicate keys", `{"args":["sh"],"cgroups":{"v2":"/nonexistent/first"},"cgroups":{"v2":"/nonexistent/second"}}`},
		{"nulls and whitespace", " \t\n{ \"args\" : [ \"sh\" ] , \"mounts\" : null , \"groups\" : [ 1 , 4294967295 ] ,\r\n" +
			`"pidNamespaceOf":null,"cgroups":{"v1":null,"v2":"/nonexistent/ws"}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sp Spec
			if err := json.Unmarshal([]byte(tc.spec), &sp); err != nil {
				t.Fatalf("Go refuses the spec: %v", err)
			}
			want := "opening the container's cgroup: open " + sp.Cgroups.ProcsFiles()[0] + ": no such file or directory"
			if err := start(t, tc.spec); err.Error() != want {
				t.Errorf("start = %q,\nwant %q", err, want)
			}
		})
	}
	for _, tc := range []struct {
		name, spec string
	}{
		{"a trailing comma", `{"args":["sh",]}`},
		{"a bad escape", `{"args":["s\x"]}`},
		{"a control character", "{\"args\":[\"s\th\"]}"},
		{"a truncated file", `{"args":["sh"`},
		{"data after the object", `{"args":["sh"]} {}`},
		{"a string for an array", `{"args":"sh"}`},
		{"a negative uid", `{"args":["sh"],"uid":-1}`},
		{"a uid out of range", `{"args":["sh"],"uid":4294967296}`},
		{"a fraction for an integer", `{"args":["sh"],"gid":1.5}`},
		{"a number with a leading zero", `{"args":["sh"],"gid":01}`},
		{"single quotes", `{'args':['sh']}`},
		{"too deep", `{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"args":["sh"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sp Spec
			if json.Unmarshal([]byte(tc.spec), &sp) == nil {
				t.Fatalf("Go reads the spec: the case is wrong")
			}
			if err := start(t, tc.spec); !strings.Contains(err.Error(), "spec.json") {
				t.Errorf("start = %v, want an error naming spec.json", err)
			}
		})
	}
}
