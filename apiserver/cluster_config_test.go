package apiserver

import (
	"context"
	"crypto/tls"
	"net"

	"cairn/apiserver/authn"
	"cairn/apiserver/registry"
)

// startAPIWith starts one more API server over store replica i, as
// startAPI does, after configure has adjusted its Config; addr is where it
// listens. It returns the server's index in c.apis.
func (c *testCluster) startAPIWith(i int, configure func(cfg *Config, addr string)) int {
	t := c.t
	serving, err := c.ca.ServerConfig("api", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	serving.ClientAuth = tls.VerifyClientCertIfGiven
	serving.NextProtos = []string{"h2", "http/1.1"}
	backend, closeBackend := LocalBackend(c.stores[i])
	t.Cleanup(closeBackend)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{TLS: serving, Authenticator: authn.Chain{authn.ClientCert{}}, Resources: registry.All(),
		Ready: StoreReady(backend.KV), Logger: quietLogger(), GitVersion: "test", Storage: backend}
	configure(&cfg, ln.Addr().String())
	api, err := New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	api.Start(ctx)
	go api.Serve(ln)
	c.apis = append(c.apis, api)
	c.urls = append(c.urls, "https://"+ln.Addr().String())
	c.cancels = append(c.cancels, cancel)
	return len(c.apis) - 1
}
