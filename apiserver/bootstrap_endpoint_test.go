package apiserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/internal/bootstrap"
	"cairn/internal/pki"
	"cairn/raftstore"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// bootstrapAPI is a one-replica store with an API server that serves the
// bootstrap endpoints, in process.
type bootstrapAPI struct {
	url   string
	ca    *pki.CA
	admin kubernetes.Interface
}

func startBootstrapAPI(t *testing.T) *bootstrapAPI {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir()}
	pkiDir := filepath.Join(c.dir, "pki")
	if err := pki.Init(pkiDir); err != nil {
		t.Fatal(err)
	}
	c.ca, _ = pki.LoadCA(pkiDir)
	peer, storeAddr := freeAddr(t), freeAddr(t)
	hosts := []string{"127.0.0.1", "localhost"}
	storeTLS, _ := c.ca.ServerConfig("s1", hosts)
	ps, pc, _ := c.ca.PeerConfigs("s1", hosts)
	s, err := raftstore.New(raftstore.Config{Name: "s1", DataDir: filepath.Join(c.dir, "s1"), PeerListen: peer, StoreListen: storeAddr,
		InitialCluster: []raftstore.Peer{{Name: "s1", Address: peer}}, TLS: &raftstore.TLSConfig{Store: storeTLS, PeerServer: ps, PeerClient: pc},
		Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	c.stores = []*raftstore.Server{s}
	t.Cleanup(c.close)

	serving, err := c.ca.ServerConfig("api", hosts)
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	backend, closeBackend := LocalBackend(s)
	t.Cleanup(closeBackend)
	members := func(context.Context) ([]bootstrap.StoreMember, error) {
		list, err := s.Members()
		if err != nil {
			return nil, err
		}
		var out []bootstrap.StoreMember
		for _, m := range list {
			out = append(out, bootstrap.StoreMember{Name: m.Name, ID: fmt.Sprintf("%x", m.ID), ClientURLs: m.ClientURLs})
		}
		return out, nil
	}
	api, err := New(Config{TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(),
		Ready: StoreReady(backend.KV), Logger: quietLogger(), GitVersion: "test", Storage: backend,
		Bootstrap: &BootstrapConfig{CA: c.ca, StoreMembers: members, TokenCleanupInterval: time.Hour}})
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
	c.apis, c.cancels = []*Server{api}, []context.CancelFunc{cancel}
	c.urls = []string{"https://" + ln.Addr().String()}
	b := &bootstrapAPI{url: c.urls[0], ca: c.ca, admin: c.client(0)}
	// Tokens live in kube-system, which the API server creates on start.
	waitUntil(t, 20*time.Second, "namespace kube-system", func() bool {
		_, err := b.admin.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
		return err == nil
	})
	return b
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *bootstrapAPI) token(t *testing.T, o bootstrap.TokenOptions) bootstrap.Token {
	t.Helper()
	tok, err := bootstrap.CreateToken(context.Background(), b.admin, b.ca.Fingerprint(), o)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestBootstrapEndpoints(t *testing.T) {
	b := startBootstrapAPI(t)
	ctx := context.Background()
	agentTok := b.token(t, bootstrap.TokenOptions{TTL: time.Hour})
	serverTok := b.token(t, bootstrap.TokenOptions{Server: true})

	t.Run("an agent gets its certificates with a token and reuses them", func(t *testing.T) {
		nc := bootstrap.NodeConfig{Servers: []string{b.url}, Token: agentTok.String(), NodeName: "n1", Dir: t.TempDir()}
		path, err := bootstrap.EnsureNodeKubeconfig(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		node, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := node.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("the node's kubeconfig does not reach the API: %v", err)
		}
		ip := []net.IP{net.ParseIP("127.0.0.1")}
		cert, caPEM, err := bootstrap.EnsureServingCert(ctx, nc, []string{"n1"}, ip)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: b.ca.Pool(), DNSName: "n1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil || len(caPEM) == 0 {
			t.Fatalf("serving certificate: %v", err)
		}
		// A restart reuses both, even once the token is gone.
		nc.Token = ""
		if again, err := bootstrap.EnsureNodeKubeconfig(ctx, nc); err != nil || again != path {
			t.Fatalf("restart: %q %v", again, err)
		}
		again, _, err := bootstrap.EnsureServingCert(ctx, nc, []string{"n1"}, ip)
		if err != nil || !again.Leaf.Equal(cert.Leaf) {
			t.Fatalf("restart did not reuse the serving certificate: %v", err)
		}
		// A new address needs a new serving certificate, signed for the
		// node on its own client certificate.
		renewed, _, err := bootstrap.EnsureServingCert(ctx, nc, []string{"n1"}, []net.IP{net.ParseIP("10.1.2.3")})
		if err != nil || renewed.Leaf.Equal(cert.Leaf) {
			t.Fatalf("a new node IP kept the old serving certificate: %v", err)
		}
	})

	t.Run("a node may not get certificates for another node", func(t *testing.T) {
		nc := bootstrap.NodeConfig{Servers: []string{b.url}, Token: agentTok.String(), NodeName: "n2", Dir: t.TempDir()}
		if _, err := bootstrap.EnsureNodeKubeconfig(ctx, nc); err != nil {
			t.Fatal(err)
		}
		// n3's request, authenticated with n2's client certificate.
		cert, err := tls.LoadX509KeyPair(filepath.Join(nc.Dir, "pki", "kubelet-client.crt"), filepath.Join(nc.Dir, "pki", "kubelet-client.key"))
		if err != nil {
			t.Fatal(err)
		}
		caPEM, _ := os.ReadFile(filepath.Join(nc.Dir, "pki", "ca.crt"))
		cl, err := bootstrap.NewCertClient(b.url, caPEM, cert)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		csr, _, _ := bootstrap.NewCSR("system:node:n3", []string{bootstrap.NodesGroup}, []string{"n3"}, nil)
		if _, err := cl.Sign(ctx, csr, bootstrap.UsageServing); err == nil || !strings.Contains(err.Error(), `may not get certificates for node "n3"`) {
			t.Fatalf("n2 got n3's serving certificate: %v", err)
		}
	})

	t.Run("only server tokens get the CA bundle", func(t *testing.T) {
		cl, err := bootstrap.Connect(ctx, b.url, agentTok)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err := cl.ServerBundle(ctx); err == nil || !strings.Contains(err.Error(), "may not join servers") {
			t.Fatalf("an agent token got the CA bundle: %v", err)
		}
		dir := filepath.Join(t.TempDir(), "pki")
		members, err := bootstrap.JoinServer(ctx, b.url, serverTok, dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pki.LoadCA(dir)
		if err != nil || got.Fingerprint() != b.ca.Fingerprint() {
			t.Fatalf("the joiner's PKI dir: %v", err)
		}
		if len(members) != 1 || members[0].Name != "s1" || len(members[0].ClientURLs) != 1 {
			t.Fatalf("store members %+v", members)
		}
	})

	t.Run("a token reaches nothing but the bootstrap endpoints", func(t *testing.T) {
		req, _ := http.NewRequest("GET", b.url+"/api/v1/namespaces/kube-system/secrets", nil)
		req.Header.Set("Authorization", "Bearer "+serverTok.Bearer())
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: b.ca.Pool()}}}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a bootstrap token listed secrets: %s", resp.Status)
		}
	})

	t.Run("a token pinning another CA is refused before it is sent", func(t *testing.T) {
		wrong := agentTok
		wrong.CAHash = strings.Repeat("0", 64)
		if _, err := bootstrap.Connect(ctx, b.url, wrong); !errors.Is(err, bootstrap.ErrCAMismatch) {
			t.Fatalf("Connect with a foreign CA hash: %v", err)
		}
	})

	// The cleanup loop is slowed down: the refusal itself deletes the
	// expired token.
	t.Run("expired and deleted tokens are refused, and expired ones cleaned up", func(t *testing.T) {
		short := b.token(t, bootstrap.TokenOptions{TTL: time.Second})
		gone := b.token(t, bootstrap.TokenOptions{})
		if err := bootstrap.DeleteToken(ctx, b.admin, gone.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		for tok, want := range map[bootstrap.Token]string{short: "expired at", gone: "no such token"} {
			_, err := bootstrap.EnsureNodeKubeconfig(ctx, bootstrap.NodeConfig{Servers: []string{b.url}, Token: tok.String(), NodeName: "n9", Dir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), "refused the token") || !strings.Contains(err.Error(), want) {
				t.Errorf("token %s: %v, want a refusal saying %q", tok.ID, err, want)
			}
		}
		waitUntil(t, 10*time.Second, "the expired token's secret to go", func() bool {
			_, err := b.admin.CoreV1().Secrets("kube-system").Get(ctx, bootstrap.SecretName(short.ID), metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})
}
