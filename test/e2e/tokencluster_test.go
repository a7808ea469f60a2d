package e2e

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tokenCluster is a cluster whose servers serve the Kubernetes API, so
// that new servers and agents can join it with tokens.
type tokenCluster struct {
	*cluster
	apis map[string]string // member name -> host:port of --api-listen
}

// newTokenCluster allocates members and their API ports; bootstrap
// starts them.
func newTokenCluster(t *testing.T, names ...string) *tokenCluster {
	t.Helper()
	c := &tokenCluster{cluster: newCluster(t, pkiInit(t), "tokens", names...), apis: map[string]string{}}
	for _, m := range c.members {
		c.apis[m.name] = freePorts(t, 1)[0]
	}
	return c
}

// args are a member's flags, without --pki-dir or how it joins.
func (c *tokenCluster) args(m *member, extra ...string) []string {
	args := []string{
		"server", "--name", m.name, "--data-dir", m.dataDir,
		"--peer-listen", m.peer, "--store-listen", m.store, "--metrics-listen", m.metrics,
		"--api-listen", c.apis[m.name], "--disable", "scheduler,controllers",
	}
	return append(args, extra...)
}

// bootstrap starts every member with --initial-cluster and the cluster's
// PKI dir, and waits until each is healthy and has written its token.
func (c *tokenCluster) bootstrap(t *testing.T) {
	t.Helper()
	for _, m := range c.members {
		m.start(t, c.args(m, "--pki-dir", c.pki, "--initial-cluster", c.initialCluster(), "--initial-cluster-token", c.token))
	}
	for _, m := range c.members {
		m.waitHealthy(t)
		waitFile(t, filepath.Join(m.dataDir, "token"))
	}
}

// newJoiner allocates a member that is not started yet.
func (c *tokenCluster) newJoiner(t *testing.T, name string) *member {
	t.Helper()
	m := newMember(t, c.dir, name)
	c.apis[name] = freePorts(t, 1)[0]
	return m
}

// joinArgs are the flags of a server joining through via's API with
// token, on a fresh data dir and without --pki-dir.
func (c *tokenCluster) joinArgs(m, via *member, token string) []string {
	return c.args(m, "--join", c.apiURL(via), "--token", token)
}

// joinWithToken starts a new server that joins through via's API with
// token, and waits until it is healthy.
func (c *tokenCluster) joinWithToken(t *testing.T, name string, via *member, token string) *member {
	t.Helper()
	m := c.newJoiner(t, name)
	c.members = append(c.members, m)
	m.start(t, c.joinArgs(m, via, token))
	m.waitHealthy(t)
	return m
}

func (c *tokenCluster) apiURL(m *member) string { return "https://" + c.apis[m.name] }

// kubeconfig is the admin kubeconfig m wrote.
func (c *tokenCluster) kubeconfig(t *testing.T, m *member) string {
	t.Helper()
	path := filepath.Join(m.dataDir, "admin.kubeconfig")
	waitFile(t, path)
	return path
}

// serverToken reads the join token m keeps in DATA/token.
func serverToken(t *testing.T, m *member) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.dataDir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// caHash is the hash a token pins for the CA in pkiDir.
func caHash(t *testing.T, pkiDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}
