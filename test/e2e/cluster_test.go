package e2e

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// cluster is a set of `cairn server` processes sharing one CA.
type cluster struct {
	dir     string
	pki     string
	token   string
	members []*member
}

// newCluster allocates members (data dirs, ports) without starting them.
// Every process the cluster starts is stopped when t ends, and when t
// failed the members' last log lines are printed first.
func newCluster(t testing.TB, pkiDir, token string, names ...string) *cluster {
	t.Helper()
	c := &cluster{dir: t.TempDir(), pki: pkiDir, token: token}
	for _, name := range names {
		c.members = append(c.members, newMember(t, c.dir, name))
	}
	// Registered after TempDir, so it runs before the dir is removed.
	t.Cleanup(func() {
		c.stopAll()
		if t.Failed() {
			for _, m := range c.members {
				t.Logf("last lines of %s's log:\n%s", m.name, m.logTail(30))
			}
		}
	})
	return c
}

// stopAll stops every member at once rather than one after another.
func (c *cluster) stopAll() {
	for _, m := range c.members {
		m.signalStop()
	}
	for _, m := range c.members {
		m.wait()
	}
}

// initialCluster is the --initial-cluster value naming every member.
func (c *cluster) initialCluster() string {
	var parts []string
	for _, m := range c.members {
		parts = append(parts, m.name+"="+m.peer)
	}
	return strings.Join(parts, ",")
}

// serverArgs are the flags every member of this cluster starts with.
func (c *cluster) serverArgs(m *member, extra ...string) []string {
	args := []string{
		"server", "--name", m.name, "--data-dir", m.dataDir, "--pki-dir", c.pki,
		"--peer-listen", m.peer, "--store-listen", m.store, "--metrics-listen", m.metrics,
		"--disable", "apiserver,scheduler,controllers",
	}
	return append(args, extra...)
}

// bootstrap starts every member with --initial-cluster (and extra flags)
// and waits until each one is healthy.
func (c *cluster) bootstrap(t testing.TB, extra ...string) {
	t.Helper()
	for _, m := range c.members {
		args := c.serverArgs(m, "--initial-cluster", c.initialCluster(), "--initial-cluster-token", c.token)
		m.start(t, append(args, extra...))
	}
	for _, m := range c.members {
		m.waitHealthy(t)
	}
}

// join starts a new member that joins the running cluster through the
// first member's store URL, and waits until it is healthy.
func (c *cluster) join(t testing.TB, name string, extra ...string) *member {
	t.Helper()
	m := newMember(t, c.dir, name)
	c.members = append(c.members, m)
	m.start(t, append(c.serverArgs(m, "--join", c.members[0].storeURL()), extra...))
	m.waitHealthy(t)
	return m
}

// member returns the member with the given name.
func (c *cluster) member(t testing.TB, name string) *member {
	t.Helper()
	for _, m := range c.members {
		if m.name == name {
			return m
		}
	}
	t.Fatalf("e2e: no member %q", name)
	return nil
}

// endpoints is the --endpoints value of the given members, or of every
// running member when none is given.
func (c *cluster) endpoints(ms ...*member) string {
	if len(ms) == 0 {
		for _, m := range c.members {
			if !m.exited() {
				ms = append(ms, m)
			}
		}
	}
	var urls []string
	for _, m := range ms {
		urls = append(urls, m.storeURL())
	}
	return strings.Join(urls, ",")
}

// clientFlags are the TLS flags of the admin identity, shared by etcdctl
// and `cairn snapshot save`.
func (c *cluster) clientFlags() []string {
	return []string{
		"--cacert", filepath.Join(c.pki, "ca.crt"),
		"--cert", filepath.Join(c.pki, "admin.crt"),
		"--key", filepath.Join(c.pki, "admin.key"),
	}
}

// etcdctlArgs builds a `cairn etcdctl` command line against endpoints.
func (c *cluster) etcdctlArgs(endpoints string, args ...string) []string {
	all := append([]string{"etcdctl", "--endpoints", endpoints}, c.clientFlags()...)
	all = append(all, "--dial-timeout", "3s", "--command-timeout", "10s")
	return append(all, args...)
}

// etcdctl runs `cairn etcdctl` against every running member as the admin
// and returns its output; a failure fails the test.
func (c *cluster) etcdctl(t testing.TB, args ...string) string {
	t.Helper()
	return mustRun(t, c.etcdctlArgs(c.endpoints(), args...)...).stdout
}

// etcdctlJSON runs `cairn etcdctl -w json` against endpoints and decodes
// its output into v, which it zeroes first.
func (c *cluster) etcdctlJSON(t testing.TB, v any, endpoints string, args ...string) {
	t.Helper()
	r := mustRun(t, c.etcdctlArgs(endpoints, append(args, "-w", "json")...)...)
	// etcdctl omits false and zero fields, so decoding over earlier
	// values would keep them.
	reflect.ValueOf(v).Elem().SetZero()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("decoding etcdctl's JSON: %v\n%s", err, r)
	}
}
