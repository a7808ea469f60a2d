package testcluster

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"cairn/apiserver"
	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
	"cairn/internal/pki"
)

// KubeletClientUser is the user whose client certificate the API
// servers of a cluster with EnableKubeletClient present to kubelets.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// EnableKubeletClient gives every live API server a client certificate
// for the kubelets (KubeletClientTLS), so that pods/log reaches agents
// serving with a certificate of the cluster CA. It restarts the API
// servers on their addresses; call it right after New, before clients
// are made.
func (c *Cluster) EnableKubeletClient() {
	t := c.t
	t.Helper()
	cert, err := c.ca.IssueTLS(pki.CertRequest{CommonName: KubeletClientUser, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	kubeletTLS := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: c.ca.Pool(), MinVersion: tls.VersionTLS12}
	for i := range c.apis {
		if !c.Alive(i) {
			continue
		}
		addr := c.APIHost(i)
		c.stops[i]()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.apis[i].Shutdown(ctx)
		cancel()
		c.startAPIWithKubeletClient(i, addr, kubeletTLS)
	}
	for i := range c.apis {
		if c.Alive(i) {
			c.waitNamespace(i, "default")
		}
	}
}

// startAPIWithKubeletClient starts API server i as startAPI does, with
// kubeletTLS; the address is retried briefly while the old server lets
// go of it.
func (c *Cluster) startAPIWithKubeletClient(i int, listen string, kubeletTLS *tls.Config) {
	t := c.t
	serving, err := c.ca.ServerConfig("api", []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	backend, closeBackend := apiserver.LocalBackend(c.stores[i])
	t.Cleanup(closeBackend)
	var ln net.Listener
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", listen); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	api, err := apiserver.New(apiserver.Config{
		TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(),
		Ready: apiserver.StoreReady(backend.KV), Logger: Logger().With("api", c.peers[i].Name),
		GitVersion: "test", Storage: backend, KubeletClientTLS: kubeletTLS,
		ServiceAccounts: serviceAccounts(t, c.ca),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	api.Start(ctx)
	go api.Serve(ln)
	c.apis[i], c.stops[i] = api, cancel
}
