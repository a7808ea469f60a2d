package apiserver

import (
	"cairn/internal/testport"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/apiserver/serviceaccount"
	"cairn/internal/kubeconfig"
	"cairn/internal/pki"
	"cairn/raftstore"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// testCluster is a real 3-replica store with an API server on each
// replica, all in process, as `cairn server` runs them.
type testCluster struct {
	t       *testing.T
	dir     string
	ca      *pki.CA
	stores  []*raftstore.Server
	apis    []*Server
	urls    []string
	cancels []context.CancelFunc
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addrs, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0]
}

func quietLogger() *slog.Logger {
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir()}
	pkiDir := filepath.Join(c.dir, "pki")
	if err := pki.Init(pkiDir); err != nil {
		t.Fatal(err)
	}
	c.ca, _ = pki.LoadCA(pkiDir)
	var peers []raftstore.Peer
	var storeAddrs []string
	for i := 0; i < n; i++ {
		peers = append(peers, raftstore.Peer{Name: fmt.Sprintf("s%d", i+1), Address: freeAddr(t)})
		storeAddrs = append(storeAddrs, freeAddr(t))
	}
	c.stores = make([]*raftstore.Server, n)
	errs := make(chan error, n)
	for i := range peers {
		go func(i int) {
			hosts := []string{"127.0.0.1", "localhost"}
			store, _ := c.ca.ServerConfig(peers[i].Name, hosts)
			ps, pc, _ := c.ca.PeerConfigs(peers[i].Name, hosts)
			s, err := raftstore.New(raftstore.Config{
				Name: peers[i].Name, DataDir: filepath.Join(c.dir, peers[i].Name), PeerListen: peers[i].Address,
				StoreListen: storeAddrs[i], InitialCluster: peers, TLS: &raftstore.TLSConfig{Store: store, PeerServer: ps, PeerClient: pc},
				HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond, LeaderLeaseTimeout: 150 * time.Millisecond,
				Logger: quietLogger(),
			})
			c.stores[i] = s
			errs <- err
		}(i)
	}
	for range peers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.close)
	for i := range c.stores {
		c.startAPI(i)
	}
	return c
}

func (c *testCluster) startAPI(i int) {
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
		Ready: StoreReady(backend.KV), Logger: quietLogger(), GitVersion: "test", Storage: backend,
		ServiceAccounts: serviceAccountsOf(t, c.ca)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	api.Start(ctx)
	go api.Serve(ln)
	c.apis = append(c.apis, api)
	c.urls = append(c.urls, "https://"+ln.Addr().String())
	c.cancels = append(c.cancels, cancel)
}

func (c *testCluster) close() {
	for i, api := range c.apis {
		c.cancels[i]()
		api.Shutdown(context.Background())
	}
	for _, s := range c.stores {
		if s != nil {
			s.Close()
		}
	}
}

// restConfig returns a client configuration for API server i as user.
func (c *testCluster) restConfig(i int, user string, groups ...string) *rest.Config {
	t := c.t
	b, err := kubeconfig.Build(c.ca, kubeconfig.Options{Servers: []string{c.urls[i]}, User: user, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.dir, fmt.Sprintf("%s-%d.kubeconfig", user, i))
	if err := kubeconfig.WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func (c *testCluster) client(i int) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(c.restConfig(i, "admin", "system:masters"))
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// serviceAccountsOf turns service account tokens on, as `cairn server`
// does, with the default issuer.
func serviceAccountsOf(t *testing.T, ca *pki.CA) *ServiceAccountConfig {
	signer, err := serviceaccount.NewSigner(ca.Key, serviceaccount.DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	return &ServiceAccountConfig{Signer: signer, CACert: ca.CertPEM}
}
