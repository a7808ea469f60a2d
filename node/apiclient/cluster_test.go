package apiclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"cairn/apiserver"
	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/internal/testcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// maxGap is the longest a client may go without a successful request, or
// an informer without an event, when an API server dies.
const maxGap = 5 * time.Second

// balanced returns a clientset over the given API servers of c, through a
// running Balancer.
func balanced(t *testing.T, c *testcluster.Cluster, servers ...int) (kubernetes.Interface, *Balancer) {
	var urls []string
	for _, i := range servers {
		urls = append(urls, c.URL(i))
	}
	rc, b, err := New(Config{
		Servers: urls, TLS: c.AdminConfig(0).TLSClientConfig, UserAgent: "apiclient-test",
		Logger: testcluster.Logger(), ProbeInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 1000, 1000
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		b.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs, b
}

// current returns the index of the API server the Balancer uses now.
func current(t *testing.T, c *testcluster.Cluster, b *Balancer) int {
	t.Helper()
	for _, e := range b.Endpoints() {
		if !e.Current {
			continue
		}
		for i := range c.Size() {
			if c.APIHost(i) == e.Host {
				return i
			}
		}
	}
	t.Fatalf("no current API server in %+v", b.Endpoints())
	return -1
}

// gaps records times of events and measures the longest pause.
type gaps struct {
	mu    sync.Mutex
	times []time.Time
}

func (g *gaps) mark() {
	g.mu.Lock()
	g.times = append(g.times, time.Now())
	g.mu.Unlock()
}

// longest is the longest pause between from and to, edges included.
func (g *gaps) longest(from, to time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var worst time.Duration
	last := from
	for _, tm := range g.times {
		if tm.Before(from) {
			continue
		}
		worst = max(worst, tm.Sub(last))
		last = tm
	}
	return max(worst, to.Sub(last))
}

func TestRequestsAndInformersSurviveAKilledAPIServer(t *testing.T) {
	c := testcluster.New(t, 3)
	cs, b := balanced(t, c, 0, 1, 2)
	// The informer outlives the writer: it must still be watching when
	// the last write's event arrives.
	informerCtx, stopInformer := context.WithCancel(context.Background())
	defer stopInformer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var seen gaps
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	cms := factory.Core().V1().ConfigMaps().Informer()
	cms.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { seen.mark() }})
	factory.Start(informerCtx.Done())
	if !cache.WaitForCacheSync(informerCtx.Done(), cms.HasSynced) {
		t.Fatal("informer did not sync")
	}

	var written gaps
	var mu sync.Mutex
	var created []string
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("tick-%d", i)
			rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := cs.CoreV1().ConfigMaps("default").Create(rctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			rcancel()
			if err == nil {
				written.mark()
				mu.Lock()
				created = append(created, name)
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	time.Sleep(1500 * time.Millisecond)
	victim := current(t, c, b)
	killed := time.Now()
	c.Kill(victim)
	t.Logf("killed API server %d (%s), the balancer's current one", victim, c.APIHost(victim))
	time.Sleep(6 * time.Second)
	end := time.Now()
	cancel()
	<-writerDone

	if g := written.longest(killed, end); g > maxGap {
		t.Errorf("writes paused for %v after the kill, want at most %v", g, maxGap)
	}
	if g := seen.longest(killed, end); g > maxGap {
		t.Errorf("the informer saw no event for %v after the kill, want at most %v", g, maxGap)
	}
	t.Logf("longest pause after the kill: writes %v, informer %v", written.longest(killed, end).Round(time.Millisecond), seen.longest(killed, end).Round(time.Millisecond))
	store := cms.GetStore()
	mu.Lock()
	defer mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for _, name := range created {
		for {
			if _, ok, _ := store.GetByKey("default/" + name); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the informer never saw %s, created through the balancer", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if i := current(t, c, b); i == victim {
		t.Fatalf("the balancer still uses the killed server")
	}
	for _, e := range b.Endpoints() {
		if e.Host == c.APIHost(victim) && e.Healthy {
			t.Fatalf("the killed server is still healthy: %+v", e)
		}
	}
}

func TestLearnsAPIServersFromTheKubernetesService(t *testing.T) {
	c := testcluster.New(t, 3)
	cs, b := balanced(t, c, 0)
	// Another API server, over the second store replica, that advertises its
	// address, so the API servers list it in the kubernetes Service's
	// EndpointSlices (the cluster's own servers do not advertise theirs).
	extra := advertisedAPIServer(t, c)
	eventually(t, 15*time.Second, "the advertised server is learned and healthy", func() bool {
		for _, e := range b.Endpoints() {
			if e.Host == extra && !e.Configured && e.Healthy {
				return true
			}
		}
		return false
	})

	c.Kill(0)
	start := time.Now()
	eventually(t, maxGap, "requests work with the only configured server dead", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	t.Logf("requests went to the learned server %v after the kill", time.Since(start).Round(time.Millisecond))
	if cur := b.Endpoints(); !slices.ContainsFunc(cur, func(e Endpoint) bool { return e.Current && e.Host == extra }) {
		t.Fatalf("current server is not the learned one: %+v", cur)
	}
}

// advertisedAPIServer starts an API server over c's second store replica
// that advertises its loopback address, and returns that host:port.
func advertisedAPIServer(t *testing.T, c *testcluster.Cluster) string {
	serving, err := c.CA().ServerConfig("api", []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	backend, closeBackend := apiserver.LocalBackend(c.Store(1))
	t.Cleanup(closeBackend)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	api, err := apiserver.New(apiserver.Config{
		TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(),
		Ready: apiserver.StoreReady(backend.KV), Logger: testcluster.Logger().With("api", "extra"),
		GitVersion: "test", Storage: backend, AdvertiseAddress: ln.Addr().String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	api.Start(ctx)
	go api.Serve(ln)
	t.Cleanup(func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		api.Shutdown(sctx)
	})
	return ln.Addr().String()
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
