package linearizability

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// replicas is the cluster size.
const replicas = 3

// memberIP is the loopback address of replica i. Each replica binds its
// outgoing peer connections to its own address, so iptables rules that name
// two of them cut exactly the Raft link between those two, while clients
// (from 127.0.0.1) still reach every replica.
func memberIP(i int) string { return fmt.Sprintf("127.0.0.%d", 11+i) }

// cluster is a running three-replica cairn cluster of real processes.
type cluster struct {
	bin     string
	dir     string
	tls     *tls.Config
	members []*member
	// admin holds one client per replica, pinned to it, for status calls,
	// watches and final reads.
	admin []*clientv3.Client
}

// startCluster creates a PKI, starts three replicas on free ports and waits
// until all of them follow one leader and serve linearizable reads. Everything it starts is stopped, and its
// dir removed, when the test ends; when the test failed, the server logs
// are first copied to a dir whose path is printed.
func startCluster(t *testing.T, bin string) *cluster {
	dir, err := os.MkdirTemp("", "cairn-lin-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{bin: bin, dir: dir}
	t.Cleanup(func() { c.close(t) })

	pkiDir := filepath.Join(dir, "pki")
	if out, err := exec.Command(bin, "pki", "init", "--dir", pkiDir).CombinedOutput(); err != nil {
		t.Fatalf("cairn pki init: %v\n%s", err, out)
	}
	if c.tls, err = adminTLS(pkiDir); err != nil {
		t.Fatal(err)
	}
	peers := make([]string, replicas)
	stores := make([]string, replicas)
	ports := make([][]int, replicas)
	for i := range replicas {
		ip := memberIP(i)
		if ports[i], err = freePorts(ip, 2); err != nil {
			t.Fatal(err)
		}
		peers[i] = fmt.Sprintf("s%d=%s", i+1, net.JoinHostPort(ip, fmt.Sprint(ports[i][0])))
		stores[i] = net.JoinHostPort(ip, fmt.Sprint(ports[i][1]))
	}
	for i := range replicas {
		name := fmt.Sprintf("s%d", i+1)
		m := &member{
			name:      name,
			ip:        memberIP(i),
			ports:     ports[i],
			storeAddr: stores[i],
			logPath:   filepath.Join(dir, name+".log"),
			args: []string{
				"server", "--name", name,
				"--data-dir", filepath.Join(dir, name+".data"),
				"--pki-dir", pkiDir,
				"--peer-listen", strings.TrimPrefix(peers[i], name+"="),
				"--store-listen", stores[i],
				"--initial-cluster", strings.Join(peers, ","),
				"--disable", "apiserver,scheduler,controllers",
				"--heartbeat-timeout", "300ms",
				"--election-timeout", "300ms",
				"--leader-lease-timeout", "150ms",
			},
		}
		c.members = append(c.members, m)
		if err := m.start(bin); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range c.members {
		cli, err := c.client(m.storeAddr)
		if err != nil {
			t.Fatal(err)
		}
		c.admin = append(c.admin, cli)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := c.waitHealthy(ctx); err != nil {
		for _, m := range c.members {
			if msg := probeStorePort(m.storeAddr, c.tls); msg != "" {
				t.Errorf("%s: %s", m.name, msg)
			}
		}
		t.Fatalf("cluster did not come up: %v", err)
	}
	return c
}

// probeStorePort explains why clients cannot reach a store port when gRPC
// only says that a deadline passed: it makes the TLS handshake a gRPC
// client makes and returns what is wrong with it, or "".
func probeStorePort(addr string, cfg *tls.Config) string {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return fmt.Sprintf("TLS handshake with the store port %s fails: %v", addr, err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		return fmt.Sprintf("the store port %s does not negotiate ALPN h2 (got %q), so gRPC clients since grpc-go 1.67 (clientv3 3.7, etcdctl) refuse it", addr, p)
	}
	return ""
}

// adminTLS is the client TLS configuration of the admin certificate.
func adminTLS(pkiDir string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		return nil, fmt.Errorf("linearizability: admin certificate: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("linearizability: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("linearizability: ca.crt holds no certificate")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// freePorts returns n TCP ports that are free on ip right now.
func freePorts(ip string, n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return nil, fmt.Errorf("linearizability: no free port on %s (is 127.0.0.0/8 routed to lo?): %w", ip, err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// client returns a client of the given endpoints with the admin identity.
func (c *cluster) client(endpoints ...string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         c.tls,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("linearizability: client for %v: %w", endpoints, err)
	}
	return cli, nil
}

// endpoints returns every replica's store address.
func (c *cluster) endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.storeAddr)
	}
	return out
}

// close stops every process and removes the cluster dir; on failure it
// keeps the server logs and says where.
func (c *cluster) close(t *testing.T) {
	for _, cli := range c.admin {
		cli.Close()
	}
	for _, m := range c.members {
		m.kill()
	}
	if t.Failed() {
		if logs, err := os.MkdirTemp("", "cairn-lin-logs-"); err == nil {
			for _, m := range c.members {
				if data, err := os.ReadFile(m.logPath); err == nil {
					os.WriteFile(filepath.Join(logs, m.name+".log"), data, 0o644)
				}
			}
			t.Logf("server logs kept in %s", logs)
		}
		if os.Getenv("CAIRN_LIN_KEEP_DATA") != "" {
			t.Logf("data dirs kept in %s", c.dir)
			return
		}
	}
	os.RemoveAll(c.dir)
}
