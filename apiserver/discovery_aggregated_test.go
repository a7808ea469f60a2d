package apiserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/internal/pki"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryclient "k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectlDiscoveryAccept is the Accept header kubectl sent for /api and
// /apis while it still knew v2beta1; client-go v0.37 sends the same
// without the v2beta1 entry.
const kubectlDiscoveryAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," +
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"

// startCatalogueAPI serves every resource of the registry, without a
// store: enough for discovery.
func startCatalogueAPI(t *testing.T) *rest.Config {
	t.Helper()
	dir := t.TempDir()
	if err := pki.Init(dir); err != nil {
		t.Fatal(err)
	}
	ca, _ := pki.LoadCA(dir)
	serving, err := ca.ServerConfig("api", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	s, err := New(Config{TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(), Logger: quietLogger(), GitVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	api := &testAPI{url: "https://" + ln.Addr().String(), ca: ca, dir: dir}
	rc, err := clientcmd.BuildConfigFromFlags("", api.kubeconfig(t, "admin", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// pathRecorder records the paths of the requests a client makes.
type pathRecorder struct {
	mu    sync.Mutex
	paths []string
	next  http.RoundTripper
}

func (p *pathRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.paths = append(p.paths, r.URL.Path)
	p.mu.Unlock()
	return p.next.RoundTrip(r)
}

// TestAggregatedDiscoveryWithClientGo checks what kubectl relies on:
// client-go's discovery finds every resource from the two aggregated
// documents alone, with the same names, kinds, scopes, verbs, short names,
// categories and subresources as the legacy per group-version lists.
func TestAggregatedDiscoveryWithClientGo(t *testing.T) {
	rc := startCatalogueAPI(t)
	rec := &pathRecorder{}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec }
	dc, err := discoveryclient.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("OnlyTheAggregatedDocumentsAreFetched", func(t *testing.T) {
		sort.Strings(rec.paths)
		if !slices.Equal(rec.paths, []string{"/api", "/apis"}) {
			t.Fatalf("requests %v, want /api and /apis only", rec.paths)
		}
	})

	t.Run("EveryResourceIsFound", func(t *testing.T) {
		found := map[string]metav1.APIResource{}
		for _, l := range lists {
			for _, r := range l.APIResources {
				found[l.GroupVersion+"/"+r.Name] = r
			}
		}
		for _, res := range servedResources(Config{Resources: registry.All()}) {
			gv := res.GVR.GroupVersion().String()
			r, ok := found[gv+"/"+res.GVR.Resource]
			if !ok {
				t.Errorf("%s/%s missing", gv, res.GVR.Resource)
				continue
			}
			if r.Kind != res.Kind || r.Namespaced != res.Namespaced || r.SingularName != singularOf(res) ||
				!slices.Equal(r.ShortNames, res.ShortNames) || !slices.Equal(r.Categories, res.Categories) || !slices.Equal(r.Verbs, resourceVerbs(res)) {
				t.Errorf("%s/%s: %+v", gv, res.GVR.Resource, r)
			}
			for _, sub := range res.Subresources {
				if _, ok := found[gv+"/"+res.GVR.Resource+"/"+sub]; !ok {
					t.Errorf("%s/%s/%s missing", gv, res.GVR.Resource, sub)
				}
			}
		}
		// Seven groups of stored resources, then the reviews' two.
		if len(groups) != 9 || groups[0].Name != "" || groups[1].Name != "apps" || groups[8].Name != "authorization.k8s.io" {
			t.Errorf("groups %+v", groups)
		}
	})

	subresources := []struct {
		name, group, version, kind string
		verbs                      []string
	}{
		{"v1/pods/log", "", "v1", "Pod", []string{"get"}},
		{"v1/pods/ephemeralcontainers", "", "v1", "Pod", []string{"get", "patch", "update"}},
		{"v1/pods/eviction", "policy", "v1", "Eviction", []string{"create"}},
		{"v1/pods/binding", "", "v1", "Binding", []string{"create"}},
		{"v1/namespaces/finalize", "", "v1", "Namespace", []string{"update"}},
		{"v1/namespaces/status", "", "v1", "Namespace", []string{"get", "patch", "update"}},
		{"apps/v1/deployments/scale", "autoscaling", "v1", "Scale", []string{"get", "patch", "update"}},
	}
	for _, tt := range subresources {
		t.Run("Subresource "+tt.name, func(t *testing.T) {
			for _, l := range lists {
				for _, r := range l.APIResources {
					if l.GroupVersion+"/"+r.Name == tt.name {
						if r.Group != tt.group || r.Version != tt.version || r.Kind != tt.kind || !slices.Equal(r.Verbs, tt.verbs) {
							t.Fatalf("%+v", r)
						}
						return
					}
				}
			}
			t.Fatal("missing")
		})
	}

	t.Run("SameAsTheLegacyDocuments", func(t *testing.T) {
		_, legacy, err := dc.WithLegacy().ServerGroupsAndResources()
		if err != nil {
			t.Fatal(err)
		}
		flatten := func(lists []*metav1.APIResourceList) map[string]metav1.APIResource {
			out := map[string]metav1.APIResource{}
			for _, l := range lists {
				gv, err := schema.ParseGroupVersion(l.GroupVersion)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range l.APIResources {
					// The aggregated form names every kind's group and
					// version; the legacy one only those that differ.
					if r.Group == "" && r.Version == "" {
						r.Group, r.Version = gv.Group, gv.Version
					}
					out[l.GroupVersion+"/"+r.Name] = r
				}
			}
			return out
		}
		agg, leg := flatten(lists), flatten(legacy)
		if len(agg) != len(leg) {
			t.Fatalf("%d resources aggregated, %d legacy", len(agg), len(leg))
		}
		for name, r := range leg {
			a := agg[name]
			if a.Kind != r.Kind || a.Group != r.Group || a.Version != r.Version || a.Namespaced != r.Namespaced || !slices.Equal(a.Verbs, r.Verbs) {
				t.Errorf("%s: aggregated %+v, legacy %+v", name, a, r)
			}
		}
	})
}

// TestAggregatedDiscoveryNegotiation checks the documents /api and /apis
// answer with, by Accept header, and the ETag revalidation clients use.
func TestAggregatedDiscoveryNegotiation(t *testing.T) {
	rc := startCatalogueAPI(t)
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	get := func(t *testing.T, path, accept, ifNoneMatch string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, rc.Host+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}
	tests := []struct {
		name, path, accept string
		aggregated         bool
	}{
		{"KubectlAcceptOnApis", "/apis", kubectlDiscoveryAccept, true},
		{"KubectlAcceptOnApi", "/api", kubectlDiscoveryAccept, true},
		{"ClientGoAccept", "/apis", discoveryclient.AcceptV2 + "," + discoveryclient.AcceptV1, true},
		{"NoPeerProfile", "/apis", discoveryclient.AcceptV2NoPeer + "," + discoveryclient.AcceptV2, true},
		{"V2Beta1OnlyFallsBackToLegacy", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", false},
		{"PlainJSON", "/apis", "application/json", false},
		{"NoAccept", "/api", "", false},
		{"LegacyPreferredByQuality", "/apis", "application/json;q=0.9," + discoveryclient.AcceptV2 + ";q=0.5", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, tt.path, tt.accept, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			ct := resp.Header.Get("Content-Type")
			if !tt.aggregated {
				if ct != "application/json" || resp.Header.Get("ETag") != "" {
					t.Fatalf("legacy answer with Content-Type %q, ETag %q", ct, resp.Header.Get("ETag"))
				}
				return
			}
			if ct != mediaDiscoveryV2 || resp.Header.Get("ETag") == "" {
				t.Fatalf("Content-Type %q ETag %q", ct, resp.Header.Get("ETag"))
			}
			var list apidiscoveryv2.APIGroupDiscoveryList
			if err := json.Unmarshal(body, &list); err != nil {
				t.Fatal(err)
			}
			if list.Kind != "APIGroupDiscoveryList" || list.APIVersion != "apidiscovery.k8s.io/v2" || len(list.Items) == 0 {
				t.Fatalf("document %s", body)
			}
			if tt.path == "/api" {
				checkCoreAggregatedGroup(t, list)
			}
		})
	}

	t.Run("UnchangedDocumentIs304", func(t *testing.T) {
		resp, _ := get(t, "/apis", kubectlDiscoveryAccept, "")
		etag := resp.Header.Get("ETag")
		again, body := get(t, "/apis", kubectlDiscoveryAccept, etag)
		if again.StatusCode != http.StatusNotModified || len(body) != 0 || again.Header.Get("ETag") != etag {
			t.Fatalf("revalidation: %d, %d bytes, ETag %q", again.StatusCode, len(body), again.Header.Get("ETag"))
		}
		other, _ := get(t, "/apis", kubectlDiscoveryAccept, `"stale"`)
		if other.StatusCode != http.StatusOK {
			t.Fatalf("stale ETag: %d", other.StatusCode)
		}
		core, _ := get(t, "/api", kubectlDiscoveryAccept, etag)
		if core.StatusCode != http.StatusOK {
			t.Fatalf("the /apis ETag revalidated /api: %d", core.StatusCode)
		}
	})
}

func checkCoreAggregatedGroup(t *testing.T, list apidiscoveryv2.APIGroupDiscoveryList) {
	t.Helper()
	if len(list.Items) != 1 || list.Items[0].Name != "" || len(list.Items[0].Versions) != 1 {
		t.Fatalf("core group: %+v", list.Items)
	}
	v := list.Items[0].Versions[0]
	if v.Version != "v1" || v.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
		t.Fatalf("core version: %s %s", v.Version, v.Freshness)
	}
	i := slices.IndexFunc(v.Resources, func(r apidiscoveryv2.APIResourceDiscovery) bool { return r.Resource == "pods" })
	if i < 0 {
		t.Fatal("no pods")
	}
	pods := v.Resources[i]
	if pods.Scope != apidiscoveryv2.ScopeNamespace || pods.SingularResource != "pod" || pods.ResponseKind.Kind != "Pod" ||
		!slices.Equal(pods.ShortNames, []string{"po"}) || !slices.Equal(pods.Categories, []string{"all"}) || len(pods.Subresources) != 8 {
		t.Fatalf("pods: %+v", pods)
	}
	j := slices.IndexFunc(v.Resources, func(r apidiscoveryv2.APIResourceDiscovery) bool { return r.Resource == "namespaces" })
	if ns := v.Resources[j]; ns.Scope != apidiscoveryv2.ScopeCluster || slices.Contains(ns.Verbs, "deletecollection") {
		t.Fatalf("namespaces: %+v", ns)
	}
}
