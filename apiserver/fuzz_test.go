package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/apiserver/storage"
	"cairn/raftstore"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Seed bodies shared by the fuzz targets.
const (
	fuzzPodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"web","image":"web:1"}]}}`
	fuzzPodYAML    = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: web\n    image: web:1\n"
	fuzzDeployJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2,` +
		`"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"web","image":"web:1"}]}}}}`
	fuzzDeployYAML = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n    matchLabels: {app: web}\n" +
		"  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers: [{name: web, image: 'web:1'}]\n"
)

// fuzzTarget picks what a fuzz input's first byte means for a create:
// bit 0 the resource, bits 1-2 the media type, bit 3 strict field
// validation.
func fuzzTarget(b uint8) (res schema.GroupVersionResource, media string, strict bool) {
	res = corev1.SchemeGroupVersion.WithResource("pods")
	if b&1 == 1 {
		res = appsv1.SchemeGroupVersion.WithResource("deployments")
	}
	media = []string{mediaJSON, mediaYAML, mediaProtobuf, mediaJSON + ";charset=utf-8"}[(b>>1)&3]
	return res, media, b&8 != 0
}

const (
	fuzzPod, fuzzDeploy           uint8 = 0, 1
	fuzzJSON, fuzzYAML, fuzzProto uint8 = 0, 2, 4
	fuzzStrict                    uint8 = 8
)

// FuzzDecodeBody posts arbitrary bodies as pods and deployments, in every
// media type, through the real handler over a real store. The server
// must never panic nor answer 5xx to a bad body, must store nothing when
// it refuses one, and what it stores must pass validation when read back.
func FuzzDecodeBody(f *testing.F) {
	seeds := []struct {
		target uint8
		body   string
	}{
		{fuzzPod | fuzzJSON, fuzzPodJSON},
		{fuzzPod | fuzzYAML, fuzzPodYAML},
		{fuzzPod | fuzzJSON | fuzzStrict, fuzzPodJSON},
		{fuzzPod | fuzzJSON | fuzzStrict, strings.Replace(fuzzPodJSON, `"spec"`, `"bogus":1,"spec"`, 1)},
		{fuzzPod | fuzzJSON | fuzzStrict, strings.Replace(fuzzPodJSON, `"metadata"`, `"kind":"Pod","metadata"`, 1)},
		{fuzzPod | fuzzJSON, strings.Replace(fuzzPodJSON, `"image":"web:1"`, `"image":""`, 1)},
		{fuzzPod | fuzzJSON, strings.Replace(fuzzPodJSON, `"name":"p"`, `"name":"Not_A_Name"`, 1)},
		{fuzzPod | fuzzJSON, strings.Replace(fuzzPodJSON, `"web:1"}]`, `"web:1","resources":{"limits":{"cpu":"1e400"}}}]`, 1)},
		{fuzzPod | fuzzJSON, strings.Replace(fuzzPodJSON, `"metadata":{`, `"metadata":{"namespace":"elsewhere",`, 1)},
		{fuzzPod | fuzzJSON, strings.Replace(fuzzPodJSON, `"metadata":{`, `"metadata":{"resourceVersion":"5",`, 1)},
		{fuzzPod | fuzzJSON, fuzzDeployJSON},
		{fuzzPod | fuzzJSON, `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"g-"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
		{fuzzPod | fuzzJSON, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":null}}`},
		{fuzzPod | fuzzJSON, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":1}}}`},
		{fuzzPod | fuzzJSON, `{"kind":"Pod"}`},
		{fuzzPod | fuzzJSON, `null`},
		{fuzzPod | fuzzJSON, `[]`},
		{fuzzPod | fuzzJSON, ``},
		{fuzzPod | fuzzJSON, strings.Repeat(`{"a":`, 500) + strings.Repeat(`}`, 500)},
		{fuzzPod | fuzzYAML, "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nkind: Pod\n"},
		{fuzzPod | fuzzYAML, "apiVersion: v1\nkind: Pod\nmetadata: !!binary aGVsbG8=\n"},
		{fuzzPod | fuzzProto, "k8s\x00\x0a\x0f\x0a\x02v1\x12\x03Pod\x12\x00"},
		{fuzzPod | fuzzProto, "k8s\x00\xff\xff\xff"},
		{fuzzPod | fuzzProto, "not protobuf"},
		{fuzzDeploy | fuzzJSON, fuzzDeployJSON},
		{fuzzDeploy | fuzzYAML, fuzzDeployYAML},
		{fuzzDeploy | fuzzJSON, strings.Replace(fuzzDeployJSON, `"matchLabels":{"app":"web"}`, `"matchLabels":{"app":"other"}`, 1)},
		{fuzzDeploy | fuzzJSON, strings.Replace(fuzzDeployJSON, `"replicas":2`, `"replicas":-1`, 1)},
		{fuzzDeploy | fuzzJSON, strings.Replace(fuzzDeployJSON, `"replicas":2`, `"replicas":1e10`, 1)},
		{fuzzDeploy | fuzzJSON | fuzzStrict, strings.Replace(fuzzDeployJSON, `"replicas":2`, `"replicas":2,"replicas":3`, 1)},
		{fuzzDeploy | fuzzYAML, fuzzPodYAML},
	}
	for _, s := range seeds {
		f.Add(s.target, []byte(s.body))
	}
	for _, s := range []struct {
		target uint8
		body   string
	}{{fuzzPod | fuzzProto, fuzzPodJSON}, {fuzzDeploy | fuzzProto, fuzzDeployJSON}} {
		f.Add(s.target, protobufOf(f, s.body))
	}

	api := newFuzzAPI(f)
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		res, media, strict := fuzzTarget(target)
		h := api.s.handlers[res]
		before := api.prefixState(t, h)
		path := "/api/v1/namespaces/fuzz/pods"
		if res.Group == "apps" {
			path = "/apis/apps/v1/namespaces/fuzz/deployments"
		}
		if strict {
			path += "?fieldValidation=Strict"
		}
		code, out := api.do(t, http.MethodPost, path, media, body)
		if code >= 500 {
			t.Fatalf("%d for a client's body: %s", code, out)
		}
		if code != http.StatusCreated {
			if after := api.prefixState(t, h); after != before {
				t.Fatalf("refused with %d (%s) yet the store changed: %s -> %s", code, out, before, after)
			}
			return
		}
		created := h.res.New()
		if err := json.Unmarshal(out, created); err != nil {
			t.Fatalf("201 with a body that is not the object: %v\n%s", err, out)
		}
		m, _ := metaOf(created)
		key := h.key(m.GetNamespace(), m.GetName())
		stored, err := h.store.Get(context.Background(), key, storage.GetOptions{})
		if err != nil {
			t.Fatalf("201 but the object cannot be read back: %v", err)
		}
		if errs := h.res.Strategy.Validate(context.Background(), stored); len(errs) > 0 {
			t.Fatalf("stored %s fails validation: %v\nbody: %q", key, errs.ToAggregate(), body)
		}
		// Start the next input from an empty namespace.
		if _, err := api.kv.Delete(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzPatch sends arbitrary patches of the three types, and server-side
// applies, to a stored pod.
// The server must never panic nor answer 5xx, and the pod it keeps must
// stay the same pod and pass validation.
func FuzzPatch(f *testing.F) {
	const (
		jsonPatch, mergePatch, strategicPatch, apply uint8 = 0, 1, 2, 3
	)
	seeds := []struct {
		typ   uint8
		patch string
	}{
		{mergePatch, `{"metadata":{"labels":{"tier":"front"}}}`},
		{mergePatch, `{"metadata":{"labels":null}}`},
		{mergePatch, `{"spec":{"containers":null}}`},
		{mergePatch, `{"spec":{"containers":[{"name":"web"}]}}`},
		{mergePatch, `{"metadata":{"name":"other"}}`},
		{mergePatch, `{"metadata":{"namespace":"default"}}`},
		{mergePatch, `{"metadata":{"uid":"another"}}`},
		{mergePatch, `{"metadata":{"resourceVersion":"1"}}`},
		{mergePatch, `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`},
		{mergePatch, `{"metadata":{"finalizers":["a/b"]}}`},
		{mergePatch, `{"status":{"phase":"Running"}}`},
		{mergePatch, `{"spec":{"activeDeadlineSeconds":-5}}`},
		{mergePatch, `{"kind":"Deployment"}`},
		{mergePatch, `null`},
		{mergePatch, `[]`},
		{mergePatch, `not json`},
		{jsonPatch, `[{"op":"replace","path":"/spec/containers/0/image","value":"web:2"}]`},
		{jsonPatch, `[{"op":"remove","path":"/spec/containers/0"}]`},
		{jsonPatch, `[{"op":"add","path":"/spec/containers/-","value":{"name":"web","image":"x"}}]`},
		{jsonPatch, `[{"op":"move","from":"/metadata/labels","path":"/spec/nodeSelector"}]`},
		{jsonPatch, `[{"op":"copy","from":"/spec","path":"/metadata/annotations/x"}]`},
		{jsonPatch, `[{"op":"test","path":"/metadata/name","value":"target"},{"op":"replace","path":"/metadata/labels/a","value":"b"}]`},
		{jsonPatch, `[{"op":"replace","path":"/spec/containers/999999999999/image","value":"x"}]`},
		{jsonPatch, `[{"op":"add","path":"/metadata/labels/x~1y","value":"z"}]`},
		{jsonPatch, `[{"op":"replace","path":"","value":{}}]`},
		{jsonPatch, `[{"op":"replace","path":""}]`},
		{jsonPatch, `[{"op":"bogus"}]`},
		{jsonPatch, `{}`},
		{strategicPatch, `{"spec":{"containers":[{"name":"web","image":"web:3"}]}}`},
		{strategicPatch, `{"spec":{"containers":[{"name":"web","$patch":"delete"}]}}`},
		{strategicPatch, `{"spec":{"containers":[{"name":"new","image":"x"}]}}`},
		{strategicPatch, `{"spec":{"$setElementOrder/containers":[{"name":"zzz"}]}}`},
		{strategicPatch, `{"spec":{"$retainKeys":["containers"],"containers":[]}}`},
		{strategicPatch, `{"metadata":{"$deleteFromPrimitiveList/finalizers":["x"]}}`},
		{strategicPatch, `{"$patch":"replace"}`},
		{strategicPatch, `{"spec":{"tolerations":[{"key":"k","operator":"Exists"}]}}`},
		{strategicPatch, `{"spec":{"containers":{"name":"web"}}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target","labels":{"tier":"front"}}}`},
		{apply, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: target\nspec:\n  containers:\n  - name: web\n    image: web:2\n"},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target"},"spec":{"containers":[{"name":"other","image":"x"}]}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target"},"spec":{"containers":[{"name":"web"},{"name":"web"}]}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target","uid":"another","namespace":"default"}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target","resourceVersion":"1"}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target","deletionTimestamp":"2020-01-01T00:00:00Z"}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target"},"status":{"phase":"Running"}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"deletionTimestamp":0}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target"},"spec":{"activeDeadlineSeconds":-5}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target","managedFields":[{}]}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"target"},"spec":{"containers":null}}`},
		{apply, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"target"}}`},
		{apply, `{"apiVersion":"v1","kind":"Pod"}`},
		{apply, "a: [\n"},
		{apply, `null`},
	}
	for _, s := range seeds {
		f.Add(s.typ, []byte(s.patch))
	}

	api := newFuzzAPI(f)
	h := api.s.handlers[corev1.SchemeGroupVersion.WithResource("pods")]
	key := h.key("fuzz", "target")
	create := func(t testing.TB) *corev1.Pod {
		code, out := api.do(t, http.MethodPost, "/api/v1/namespaces/fuzz/pods", mediaJSON, []byte(strings.Replace(fuzzPodJSON, `"name":"p"`, `"name":"target"`, 1)))
		if code != http.StatusCreated {
			t.Fatalf("creating the pod: %d %s", code, out)
		}
		var p corev1.Pod
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	orig := create(f)
	f.Fuzz(func(t *testing.T, typ uint8, patch []byte) {
		pt := []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType}[typ%4]
		path := "/api/v1/namespaces/fuzz/pods/target?fieldManager=fuzz"
		if pt == types.ApplyYAMLPatchType {
			path += "&force=true" // to reach the merge past the creator's fields
		}
		code, out := api.do(t, http.MethodPatch, path, string(pt), patch)
		if code >= 500 {
			t.Fatalf("%d for a %s: %s", code, pt, out)
		}
		obj, err := h.store.Get(context.Background(), key, storage.GetOptions{})
		if err != nil {
			t.Fatalf("after a %s answered %d: %v", pt, code, err)
		}
		pod := obj.(*corev1.Pod)
		if pod.UID != orig.UID || pod.Name != "target" || pod.Namespace != "fuzz" || pod.DeletionTimestamp != nil {
			t.Fatalf("a %s changed the pod's identity: %+v", pt, pod.ObjectMeta)
		}
		if errs := h.res.Strategy.Validate(context.Background(), pod); len(errs) > 0 {
			t.Fatalf("after a %s answered %d the stored pod fails validation: %v\npatch: %q", pt, code, errs.ToAggregate(), patch)
		}
		if code == http.StatusOK && pod.ResourceVersion != orig.ResourceVersion {
			// Start the next input from the original pod.
			if _, err := api.kv.Delete(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			orig = create(t)
		}
	})
}

// fuzzAPI is an API server over a 1-replica store, driven through its
// HTTP handler in process; one serves a whole fuzz target.
type fuzzAPI struct {
	s  *Server
	kv clientv3.KV
}

const fuzzToken = "fuzz-token"

func newFuzzAPI(tb testing.TB) *fuzzAPI {
	tb.Helper()
	dir := tb.TempDir()
	peer, storeAddr := loopbackAddr(tb), loopbackAddr(tb)
	store, err := raftstore.New(raftstore.Config{
		Name: "s1", DataDir: filepath.Join(dir, "s1"), PeerListen: peer, StoreListen: storeAddr,
		InitialCluster:   []raftstore.Peer{{Name: "s1", Address: peer}},
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, LeaderLeaseTimeout: 50 * time.Millisecond,
		Logger: quietLogger(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	backend, closeBackend := LocalBackend(store)
	tb.Cleanup(closeBackend)
	tokens, err := authn.ParseTokenFile(strings.NewReader(fuzzToken+`,admin,1,"system:masters"`+"\n"), "tokens.csv")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(Config{Authenticator: tokens, Resources: registry.All(), Logger: quietLogger(), GitVersion: "fuzz", Storage: backend})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	s.Start(ctx)
	api := &fuzzAPI{s: s, kv: backend.KV}
	// The namespace also proves the store has a leader and the caches run.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out := api.do(tb, http.MethodPost, "/api/v1/namespaces", mediaJSON, []byte(`{"metadata":{"name":"fuzz"}}`))
		if code == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("creating namespace fuzz: %d %s", code, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return api
}

// do serves one request and returns the status code and body.
func (a *fuzzAPI) do(tb testing.TB, method, path, contentType string, body []byte) (int, []byte) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+fuzzToken)
	r.Header.Set("Content-Type", contentType)
	r.Header.Set("Accept", mediaJSON)
	w := httptest.NewRecorder()
	if p, stack := serveRecovering(a.s.Handler(), w, r); p != nil {
		// net/http would recover it too, and drop the client's connection.
		tb.Fatalf("%s %s panicked: %v\n%s", method, path, p, stack)
	}
	return w.Code, w.Body.Bytes()
}

// serveRecovering serves r and returns what the handler panicked with, if
// it did, and where, so that one input fails one fuzz case rather than
// the whole test binary.
func serveRecovering(h http.Handler, w http.ResponseWriter, r *http.Request) (p any, stack []byte) {
	defer func() {
		if p = recover(); p != nil {
			stack = debug.Stack()
		}
	}()
	h.ServeHTTP(w, r)
	return nil, nil
}

// prefixState summarizes a resource's keys: how many, and the newest
// revision among them. Any write under the prefix changes it.
func (a *fuzzAPI) prefixState(tb testing.TB, h *restHandler) string {
	tb.Helper()
	prefix := h.prefix("")
	resp, err := a.kv.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend))
	if err != nil {
		tb.Fatal(err)
	}
	newest := int64(0)
	if len(resp.Kvs) > 0 {
		newest = resp.Kvs[0].ModRevision
	}
	return fmt.Sprintf("%d keys, newest at %d", resp.Count, newest)
}

// protobufOf encodes a JSON object as the Kubernetes protobuf a client
// would send.
func protobufOf(tb testing.TB, js string) []byte {
	tb.Helper()
	obj, _, err := codecs.UniversalDeserializer().Decode([]byte(js), nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaProtobuf)
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func loopbackAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
