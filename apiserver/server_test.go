package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/internal/kubeconfig"
	"cairn/internal/pki"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryclient "k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

// testResources is a small catalogue, enough for discovery.
func testResources() []*registry.Resource {
	return []*registry.Resource{
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", ListKind: "PodList", Namespaced: true,
			ShortNames: []string{"po"}, Categories: []string{"all"}, Subresources: []string{"status", "binding", "log", "eviction"},
			New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} }},
		{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", ListKind: "DeploymentList", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: []string{"all"}, Subresources: []string{"status", "scale"},
			New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} }},
	}
}

type testAPI struct {
	url string
	ca  *pki.CA
	dir string
}

func startTestAPI(t *testing.T, ready func(context.Context) error) *testAPI {
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
	s, err := New(Config{TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: testResources(), Ready: ready,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), GitVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return &testAPI{url: "https://" + ln.Addr().String(), ca: ca, dir: dir}
}

func (a *testAPI) kubeconfig(t *testing.T, user string, groups ...string) string {
	b, err := kubeconfig.Build(a.ca, kubeconfig.Options{Servers: []string{a.url}, User: user, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(a.dir, user+".kubeconfig")
	if err := kubeconfig.WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDiscoveryWithClientGo(t *testing.T) {
	api := startTestAPI(t, nil)
	rc, err := clientcmd.BuildConfigFromFlags("", api.kubeconfig(t, "admin", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discoveryclient.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = true
			if r.Name == "deployments" && (len(r.ShortNames) != 1 || r.ShortNames[0] != "deploy") {
				t.Errorf("deployments short names %v", r.ShortNames)
			}
		}
	}
	for _, want := range []string{"v1/pods", "v1/pods/status", "apps/v1/deployments", "apps/v1/deployments/scale"} {
		if !found[want] {
			t.Errorf("discovery lacks %s (has %v)", want, found)
		}
	}
	v, err := dc.ServerVersion()
	if err != nil || v.Major != "1" {
		t.Fatalf("version: %v %v", v, err)
	}
}

func TestAnonymousRequestsAreRefusedButHealthIsOpen(t *testing.T) {
	notReady := errors.New("no quorum")
	api := startTestAPI(t, func(context.Context) error { return notReady })
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: api.ca.Pool()}}}
	for path, want := range map[string]int{"/api/v1/pods": 401, "/apis": 401, "/version": 401, "/livez": 200, "/healthz": 200, "/readyz": 503} {
		resp, err := c.Get(api.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
