// Package testcluster starts a real Cairn control plane inside a test
// process: a Raft-replicated store of N replicas on loopback, with an API
// server over each replica, wired as `cairn server` wires them. Tests of the
// scheduler, the controllers, the leader loops and the agent use it to talk
// to a real API through client-go.
package testcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/apiserver"
	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/apiserver/serviceaccount"
	"cairn/internal/kubeconfig"
	"cairn/internal/pki"
	"cairn/internal/testport"
	"cairn/raftstore"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a running in-process control plane.
type Cluster struct {
	t      testing.TB
	opts   Options
	dir    string
	ca     *pki.CA
	peers  []raftstore.Peer
	stores []*raftstore.Server
	apis   []*apiserver.Server
	urls   []string
	stops  []context.CancelFunc
	mu     sync.Mutex
	closed []bool
}

// Logger is the logger the cluster's parts use: silent unless
// CAIRN_TEST_LOG is set, so a failing test can be rerun with logs.
func Logger() *slog.Logger {
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// New starts n replicas, each with an API server, and stops them when the
// test ends. It returns once every replica's system namespaces are
// visible, so objects can be created at once.
func New(t testing.TB, n int) *Cluster {
	t.Helper()
	return NewWithOptions(t, n, Options{})
}

// Options configure a cluster beyond its size.
type Options struct {
	// LogStore is the replicas' Raft log store, as --raft-log-store:
	// "boltdb" (the default) or "wal".
	LogStore string
}

// NewWithOptions is New with opts.
func NewWithOptions(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, opts: opts, dir: t.TempDir(), closed: make([]bool, n)}
	pkiDir := filepath.Join(c.dir, "pki")
	if err := pki.Init(pkiDir); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	c.ca = ca
	addrs, err := testport.Free(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		c.peers = append(c.peers, raftstore.Peer{Name: fmt.Sprintf("s%d", i+1), Address: addrs[2*i]})
	}
	c.stores = make([]*raftstore.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range c.peers {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c.stores[i], errs[i] = c.startStore(i, addrs[2*i+1])
		}(i)
	}
	wg.Wait()
	t.Cleanup(c.close)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.apis = make([]*apiserver.Server, n)
	c.urls = make([]string, n)
	c.stops = make([]context.CancelFunc, n)
	for i := range c.stores {
		c.startAPI(i, "127.0.0.1:0")
	}
	for i := range c.apis {
		c.waitNamespace(i, "kube-system")
		c.waitNamespace(i, "default")
		c.waitReady(i)
	}
	return c
}

// waitReady waits until API server i answers /readyz, which it does once
// it has also put the default roles and bindings in place: the start-up
// writes are over, and a test counting writes counts only its own.
func (c *Cluster) waitReady(i int) {
	cs := c.Client(i)
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(context.Background()).Error()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testcluster: API server %d is not ready after 15s: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) startStore(i int, storeAddr string) (*raftstore.Server, error) {
	name := c.peers[i].Name
	hosts := []string{"127.0.0.1", "localhost"}
	store, err := c.ca.ServerConfig(name, hosts)
	if err != nil {
		return nil, err
	}
	ps, pc, err := c.ca.PeerConfigs(name, hosts)
	if err != nil {
		return nil, err
	}
	return raftstore.New(raftstore.Config{
		Name: name, DataDir: filepath.Join(c.dir, name), PeerListen: c.peers[i].Address,
		StoreListen: storeAddr, InitialCluster: c.peers, LogStore: c.opts.LogStore,
		TLS:              &raftstore.TLSConfig{Store: store, PeerServer: ps, PeerClient: pc},
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond, RequestTimeout: 5 * time.Second,
		Logger: Logger().With("member", name),
	})
}

func (c *Cluster) startAPI(i int, listen string) {
	t := c.t
	serving, err := c.ca.ServerConfig("api", []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	backend, closeBackend := apiserver.LocalBackend(c.stores[i])
	t.Cleanup(closeBackend)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String()
	api, err := apiserver.New(apiserver.Config{
		TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(),
		Ready: apiserver.StoreReady(backend.KV), Logger: Logger().With("api", c.peers[i].Name),
		GitVersion: "test", Storage: backend, ServiceAccounts: serviceAccounts(t, c.ca),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	api.Start(ctx)
	go api.Serve(ln)
	c.apis[i], c.urls[i], c.stops[i] = api, url, cancel
}

func (c *Cluster) waitNamespace(i int, name string) {
	cs := c.Client(i)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{ResourceVersion: "0"})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testcluster: API server %d has no namespace %s after 15s: %v", i, name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) close() {
	for i := range c.stores {
		c.Kill(i)
	}
}

// Size is the number of replicas the cluster was started with.
func (c *Cluster) Size() int { return len(c.stores) }

// Dir is the cluster's scratch directory (PKI and data dirs live in it).
func (c *Cluster) Dir() string { return c.dir }

// CA is the cluster's certificate authority.
func (c *Cluster) CA() *pki.CA { return c.ca }

// Store returns replica i's store.
func (c *Cluster) Store(i int) *raftstore.Server { return c.stores[i] }

// URL returns API server i's https URL.
func (c *Cluster) URL(i int) string { return c.urls[i] }

// RestConfig returns a client configuration for API server i as user,
// member of groups, with client-go's rate limits lifted (tests write in
// bursts).
func (c *Cluster) RestConfig(i int, user string, groups ...string) *rest.Config {
	b, err := kubeconfig.Build(c.ca, kubeconfig.Options{Servers: []string{c.urls[i]}, User: user, Groups: groups})
	if err != nil {
		c.t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		c.t.Fatal(err)
	}
	rc.QPS, rc.Burst = 1000, 1000
	return rc
}

// AdminConfig is RestConfig for the cluster administrator.
func (c *Cluster) AdminConfig(i int) *rest.Config {
	return c.RestConfig(i, "admin", "system:masters")
}

// Client returns an administrator's clientset of API server i.
func (c *Cluster) Client(i int) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(c.AdminConfig(i))
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// Leader returns the index of the replica that leads the store, waiting
// up to 10s for one.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for i, s := range c.stores {
			if !c.closed[i] && s.IsLeader() {
				c.mu.Unlock()
				return i
			}
		}
		c.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("testcluster: no store leader within 10s")
	return -1
}

// Kill stops replica i and its API server at once, as when the process
// dies. Killing a stopped replica does nothing.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	if c.closed[i] {
		c.mu.Unlock()
		return
	}
	c.closed[i] = true
	c.mu.Unlock()
	// Connections reset at once, as the process's death resets them: a
	// graceful shutdown would hold the clients' requests in flight on
	// them for seconds, which no real failure does.
	if c.apis[i] != nil {
		c.stops[i]()
		c.apis[i].Close()
	}
	if c.stores[i] != nil {
		c.stores[i].Close()
	}
}

// Alive reports whether replica i has not been killed.
func (c *Cluster) Alive(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed[i]
}

// APIHost returns API server i's host:port.
func (c *Cluster) APIHost(i int) string { return strings.TrimPrefix(c.urls[i], "https://") }

// serviceAccounts turns service account tokens on, as `cairn server`
// does, with the default issuer.
func serviceAccounts(t testing.TB, ca *pki.CA) *apiserver.ServiceAccountConfig {
	signer, err := serviceaccount.NewSigner(ca.Key, serviceaccount.DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	return &apiserver.ServiceAccountConfig{Signer: signer, CACert: ca.CertPEM}
}
