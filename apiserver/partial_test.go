package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// metadataClient is client-go's metadata client of API server i; it asks
// for protobuf first, then JSON. The content types of its answers are
// recorded in types.
func (c *testCluster) metadataClient(t *testing.T, i int, types *contentTypes) metadata.Interface {
	t.Helper()
	rc := c.restConfig(i, "admin", "system:masters")
	if types != nil {
		rc.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				res, err := next.RoundTrip(r)
				if err == nil {
					types.add(res.Header.Get("Content-Type"))
				}
				return res, err
			})
		}
	}
	mc, err := metadata.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

// contentTypes collects response content types.
type contentTypes struct {
	mu  sync.Mutex
	all []string
}

func (c *contentTypes) add(ct string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, ct)
}

func (c *contentTypes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.all, " ")
}

// TestMetadataClientGetsAndListsObjectMetadata is what client-go's
// metadata client does: it reads objects without their spec, in
// protobuf.
func TestMetadataClientGetsAndListsObjectMetadata(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	cs := c.client(0)
	waitNamespace(t, cs, "default")
	for _, name := range []string{"a", "b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"meta": name}},
			Data: map[string]string{"big": strings.Repeat("x", 1000)}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var types contentTypes
	mc := c.metadataClient(t, 0, &types).Resource(configMapsGVR).Namespace("default")
	got, err := mc.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || got.UID == "" || got.Labels["meta"] != "a" || got.ResourceVersion == "" {
		t.Fatalf("metadata of a: %+v", got.ObjectMeta)
	}
	list, err := mc.List(ctx, metav1.ListOptions{LabelSelector: "meta=b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "b" || list.ResourceVersion == "" {
		t.Fatalf("metadata list: %+v", list)
	}
	if got := types.String(); got != mediaProtobuf+" "+mediaProtobuf {
		t.Fatalf("answers came as %q, want protobuf", got)
	}
}

// TestPartialObjectMetadataResponses checks the wire format and the
// media types clients combine: kube-apiserver's answers, including its
// 406 for an object asked for as a list and the other way round.
func TestPartialObjectMetadataResponses(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	cs := c.client(0)
	waitNamespace(t, cs, "default")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wire"}, Data: map[string]string{"key": "value-only-in-data"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const one = "/api/v1/namespaces/default/configmaps/wire"
	const all = "/api/v1/namespaces/default/configmaps"
	tests := []struct {
		name, path, accept string
		wantKind           string // "" expects a 406
		wantType           string
	}{
		{"object as JSON", one, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "PartialObjectMetadata", mediaJSON},
		{"object as YAML", one, "application/yaml;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "PartialObjectMetadata", mediaYAML},
		{"list as JSON", all, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "PartialObjectMetadataList", mediaJSON},
		{"unknown version falls through", one, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v9,application/json", "ConfigMap", mediaJSON},
		{"object as a list", one, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "", ""},
		{"list as an object", all, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := cs.CoreV1().RESTClient().Get().AbsPath(tt.path).SetHeader("Accept", tt.accept).Do(ctx)
			var code int
			res.StatusCode(&code)
			body, err := res.Raw()
			if tt.wantKind == "" {
				if code != 406 || !apierrors.IsNotAcceptable(err) {
					t.Fatalf("status %d, err %v, want 406 NotAcceptable", code, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ct string
			res.ContentType(&ct)
			if ct != tt.wantType {
				t.Fatalf("content type %q, want %q", ct, tt.wantType)
			}
			if tt.wantType == mediaYAML {
				if !strings.Contains(string(body), "kind: "+tt.wantKind) || strings.Contains(string(body), "value-only-in-data") {
					t.Fatalf("body:\n%s", body)
				}
				return
			}
			var u map[string]any
			if err := json.Unmarshal(body, &u); err != nil {
				t.Fatal(err)
			}
			if u["kind"] != tt.wantKind {
				t.Fatalf("kind %v, want %s", u["kind"], tt.wantKind)
			}
			if tt.wantKind != "ConfigMap" && (strings.Contains(string(body), "value-only-in-data") || u["apiVersion"] != "meta.k8s.io/v1") {
				t.Fatalf("body %s: want meta.k8s.io/v1 metadata only", body)
			}
		})
	}
}

// TestMetadataInformerFollowsChanges runs a metadata informer, as the
// garbage collector does, in both ways client-go fills informers: its
// cache holds PartialObjectMetadata and follows adds, updates and
// deletes, watch bookmarks included.
func TestMetadataInformerFollowsChanges(t *testing.T) {
	for _, mode := range informerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := newTestCluster(t, 1)
			ctx := ctxT(t)
			cs := c.client(0)
			waitNamespace(t, cs, "default")
			c.waitCachesReady(t)
			if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			inf := newMetadataInformer(c.metadataClient(t, 0, nil), mode.watchList)
			var mu sync.Mutex
			var seen []string
			inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: func(obj any) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, "+"+obj.(*metav1.PartialObjectMetadata).Name)
				},
				UpdateFunc: func(_, obj any) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, "~"+obj.(*metav1.PartialObjectMetadata).Name+"="+obj.(*metav1.PartialObjectMetadata).Labels["v"])
				},
				DeleteFunc: func(obj any) {
					if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
						obj = tomb.Obj
					}
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, "-"+obj.(*metav1.PartialObjectMetadata).Name)
				},
			})
			runInformers(t, inf)
			after := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after", Labels: map[string]string{"v": "1"}}}
			if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, after, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			after.Labels["v"] = "2"
			if _, err := cs.CoreV1().ConfigMaps("default").Update(ctx, after, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			want := "[+before +after ~after=2 -before]"
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				got := strings.Join(seen, " ")
				mu.Unlock()
				if "["+got+"]" == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("informer saw [%s], want %s", got, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cached, ok, err := inf.GetStore().GetByKey("default/after")
			if err != nil || !ok {
				t.Fatalf("default/after not cached: %v", err)
			}
			if p := cached.(*metav1.PartialObjectMetadata); p.Labels["v"] != "2" || p.UID == "" {
				t.Fatalf("cached %+v", p.ObjectMeta)
			}
		})
	}
}

// newMetadataInformer is metadatainformer's informer of configmaps, or
// one that lists and then watches through the same client.
func newMetadataInformer(mc metadata.Interface, watchList bool) cache.SharedIndexInformer {
	if watchList {
		return metadatainformer.NewFilteredMetadataInformer(mc, configMapsGVR, "default", 0, cache.Indexers{}, nil).Informer()
	}
	r := mc.Resource(configMapsGVR).Namespace("default")
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return r.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformer(listThenWatch{lw}, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
}
