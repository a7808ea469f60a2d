package apiserver

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Operations on a testCluster for tests that stop, kill and restart its
// parts, or that need clients other than the default one.

// unthrottledClient is an admin client of API server i without
// client-go's default limit of 5 requests a second, for tests that write
// in bursts.
func (c *testCluster) unthrottledClient(t *testing.T, i int) kubernetes.Interface {
	rc := c.restConfig(i, "admin", "system:masters")
	rc.QPS, rc.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitCachesReady waits until every API server's watch caches have made
// their first list. A cache serves watches only from the revision of that
// list on, so a test that watches from a resourceVersion must not write
// it before then (a fresh API server answers 410 Gone to older ones, as
// Kubernetes does).
func (c *testCluster) waitCachesReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i, api := range c.apis {
		for gvr, h := range api.handlers {
			for !h.store.Ready() {
				if time.Now().After(deadline) {
					t.Fatalf("API server %d: the %s cache is not ready after 10s", i, gvr.Resource)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// raftLeader returns the index of the replica leading the store.
func (c *testCluster) raftLeader(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range c.stores {
			if s.IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no store leader within 10s")
	return -1
}

// stopAPI stops API server i, ending its watches, as a restart does.
func (c *testCluster) stopAPI(ctx context.Context, i int) {
	c.cancels[i]()
	c.apis[i].Shutdown(ctx)
}

// killReplica stops store replica i and its API server at once, as when
// the process dies.
func (c *testCluster) killReplica(i int) {
	c.stores[i].Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.stopAPI(ctx, i)
}

// restartAPI starts a new API server on API server i's address, over the
// same store replica, after stopAPI: its watch caches start afresh.
func (c *testCluster) restartAPI(i int) {
	t := c.t
	serving, err := c.ca.ServerConfig("api", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	backend, closeBackend := LocalBackend(c.stores[i])
	t.Cleanup(closeBackend)
	api, err := New(Config{TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(),
		Ready: StoreReady(backend.KV), Logger: quietLogger(), GitVersion: "test", Storage: backend})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", strings.TrimPrefix(c.urls[i], "https://"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	api.Start(ctx)
	go api.Serve(ln)
	c.apis[i], c.cancels[i] = api, cancel
}

// startFreshAPI starts one more API server over store replica i, with
// watch caches that start now, and returns an admin client of it.
func (c *testCluster) startFreshAPI(t *testing.T, i int) kubernetes.Interface {
	c.startAPI(i)
	return c.client(len(c.apis) - 1)
}

// waitNamespace waits until an API server's cache holds a namespace (the
// system ones are created in the background at start), which is where it
// looks when objects are created in it.
func waitNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{ResourceVersion: "0"})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retryTransient runs op until it succeeds, retrying the errors a write
// meets while the store changes leader (500, 503, 504, 429) for up to 10s.
func retryTransient(t *testing.T, op func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := op()
		if err == nil {
			return
		}
		transient := apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
			apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
		if !transient || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
