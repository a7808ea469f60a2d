package raftstore

import (
	"cairn/internal/testport"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/pki"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// testCluster is a real cluster of store replicas on loopback, with TLS.
type testCluster struct {
	t       *testing.T
	dir     string
	ca      *pki.CA
	pkiDir  string
	peers   []Peer
	stores  []string
	cfgs    []Config
	servers []*Server
}

type clusterOption func(*Config)

func freeAddr(t *testing.T) string {
	t.Helper()
	addrs, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0]
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func newTestCluster(t *testing.T, n int, opts ...clusterOption) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir()}
	c.pkiDir = filepath.Join(c.dir, "pki")
	if err := pki.Init(c.pkiDir); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(c.pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	c.ca = ca
	for i := 0; i < n; i++ {
		c.peers = append(c.peers, Peer{Name: fmt.Sprintf("s%d", i+1), Address: freeAddr(t)})
		c.stores = append(c.stores, freeAddr(t))
	}
	for i := 0; i < n; i++ {
		cfg := c.memberConfig(c.peers[i].Name, c.peers[i].Address, c.stores[i])
		cfg.InitialCluster = c.peers
		for _, o := range opts {
			o(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
	}
	c.servers = make([]*Server, n)
	errs := make(chan error, n)
	for i := range c.cfgs {
		go func(i int) {
			s, err := New(c.cfgs[i])
			c.servers[i] = s
			errs <- err
		}(i)
	}
	for range c.cfgs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(c.close)
	c.waitLeader()
	return c
}

func (c *testCluster) memberConfig(name, peer, store string) Config {
	tlsCfg, err := testTLS(c.ca, name)
	if err != nil {
		c.t.Fatal(err)
	}
	return Config{
		Name:               name,
		DataDir:            filepath.Join(c.dir, name),
		PeerListen:         peer,
		StoreListen:        store,
		TLS:                tlsCfg,
		CAFingerprint:      c.ca.Fingerprint(),
		Logger:             testLogger(c.t).With("test_member", name),
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond,
		RequestTimeout:     5 * time.Second,
	}
}

func testTLS(ca *pki.CA, name string) (*TLSConfig, error) {
	hosts := []string{"localhost", "127.0.0.1"}
	store, err := ca.ServerConfig(name, hosts)
	if err != nil {
		return nil, err
	}
	ps, pc, err := ca.PeerConfigs(name, hosts)
	if err != nil {
		return nil, err
	}
	cert, err := ca.IssueTLS(pki.CertRequest{CommonName: name, Client: true})
	if err != nil {
		return nil, err
	}
	return &TLSConfig{Store: store, PeerServer: ps, PeerClient: pc,
		Client: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool()}}, nil
}

func (c *testCluster) close() {
	for _, s := range c.servers {
		if s != nil {
			s.Close()
		}
	}
}

// waitLeader waits until one live replica is the ready leader and returns it.
func (c *testCluster) waitLeader() int {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range c.servers {
			if s != nil && s.IsLeader() {
				return i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader within 15s")
	return -1
}

// stop shuts replica i down gracefully (its data dir stays).
func (c *testCluster) stop(i int) {
	c.servers[i].Close()
	c.servers[i] = nil
}

// crash stops replica i as its peers see a killed process: its peer port
// refuses at once and its Raft falls silent, with no leadership hand-off.
func (c *testCluster) crash(i int) {
	s := c.servers[i]
	s.mux.Close()
	if err := s.raft.Shutdown().Error(); err != nil {
		c.t.Fatal(err)
	}
	s.Close()
	c.servers[i] = nil
}

func (c *testCluster) restart(i int) {
	c.t.Helper()
	cfg := c.cfgs[i]
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if c.servers[i], err = New(cfg); err == nil {
			return
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("restarting %s: %v", cfg.Name, err)
}

func (c *testCluster) adminTLS() *tls.Config {
	cfg, err := pki.ClientConfig(filepath.Join(c.pkiDir, "ca.crt"), filepath.Join(c.pkiDir, "admin.crt"), filepath.Join(c.pkiDir, "admin.key"))
	if err != nil {
		c.t.Fatal(err)
	}
	return cfg
}

// client returns an etcd client for the given replicas (all if none).
func (c *testCluster) client(members ...int) *clientv3.Client {
	c.t.Helper()
	if len(members) == 0 {
		for i := range c.stores {
			members = append(members, i)
		}
	}
	var eps []string
	for _, i := range members {
		eps = append(eps, "https://"+c.stores[i])
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: c.adminTLS(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
