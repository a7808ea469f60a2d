package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/pki"
	"cairn/internal/privtest"
	"cairn/node/network"
)

// TestAgentJoinsWithToken starts an agent with nothing but an API server
// URL and a join token: it gets its client and kubelet serving
// certificates through the API, registers its Node, and after a restart
// without the token (deleted meanwhile) reuses what it got.
func TestAgentJoinsWithToken(t *testing.T) {
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin)
	c := newTokenCluster(t, "s1")
	c.bootstrap(t)
	s1 := c.member(t, "s1")
	admin := c.kubeconfig(t, s1)
	token := strings.TrimSpace(mustRun(t, "token", "create", "--kubeconfig", admin, "--description", "e2e agent").stdout)

	var b [3]byte
	rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	node, cgroup := "tok-"+suffix, "/cairn-e2e-"+suffix
	dir := t.TempDir()
	netns := filepath.Join(dir, "netns")
	if err := network.NewNetNS(netns); err != nil {
		privtest.Unavailable(t, "cannot create a network namespace: %v", err)
	}
	agent := newMember(t, dir, "agent")
	data := filepath.Join(dir, "agent")
	t.Cleanup(func() {
		agent.stop()
		network.RemoveNetNS(netns)
		removeCgroupDir(cgroup)
		// The embedded runtime's directory of sandbox namespaces, empty
		// once the agent has stopped.
		os.Remove(filepath.Join("/run/cairn/netns", node))
	})
	kubeletPort := strings.Split(agent.metrics, ":")[1]
	args := []string{"agent", "--server", c.apiURL(s1), "--node-name", node, "--node-ip", "127.0.0.1",
		"--data-dir", data, "--runtime", "embedded", "--netns", netns, "--cgroup-root", cgroup,
		"--kubelet-address", "127.0.0.1", "--kubelet-port", kubeletPort, "--cluster-cidr", "10.98.0.0/16",
		// The eBPF proxy would attach to the machine's root cgroup; joining
		// with a token does not need it.
		"--proxy", "none"}
	agent.start(t, append(args, "--token", token))

	k := newKubectl(t, admin)
	waitNodeReady := func(after time.Time) {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		for {
			if agent.exited() {
				t.Fatalf("the agent exited (%v):\n%s", agent.err, agent.logTail(30))
			}
			r := k.run(t, "get", "lease", "-n", "kube-node-lease", node, "-o", "jsonpath={.spec.renewTime}")
			if r.code == 0 {
				if renewed, err := time.Parse(time.RFC3339Nano, r.stdout); err == nil && renewed.After(after) {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s did not renew its lease after %v:\n%s\nagent log:\n%s", node, after, r, agent.logTail(30))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitNodeReady(time.Now().Add(-time.Minute))
	if out := k.must(t, "get", "node", node, "-o", "name"); strings.TrimSpace(out) != "node/"+node {
		t.Fatalf("get node printed %q", out)
	}

	clientCert := filepath.Join(data, "pki", "kubelet-client.crt")
	first, err := os.ReadFile(clientCert)
	if err != nil {
		t.Fatalf("the agent kept no client certificate: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "kubelet.kubeconfig")); err != nil {
		t.Fatalf("the agent wrote no kubeconfig: %v", err)
	}
	ca, err := pki.LoadCA(c.pki)
	if err != nil {
		t.Fatal(err)
	}
	adminCert, err := tls.LoadX509KeyPair(filepath.Join(c.pki, "admin.crt"), filepath.Join(c.pki, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", "127.0.0.1:"+kubeletPort, &tls.Config{RootCAs: ca.Pool(), ServerName: node, Certificates: []tls.Certificate{adminCert}})
	if err != nil {
		t.Fatalf("the kubelet API does not serve a certificate of the cluster CA for %s: %v", node, err)
	}
	conn.Close()

	// Restart without the token, which is gone: the agent reuses its
	// certificates.
	mustRun(t, "token", "delete", "--kubeconfig", admin, token)
	if err := agent.stop(); err != nil {
		t.Logf("agent stop: %v", err)
	}
	restarted := time.Now()
	agent.start(t, args)
	waitNodeReady(restarted)
	if again, _ := os.ReadFile(clientCert); !bytes.Equal(again, first) {
		t.Errorf("the restarted agent replaced its client certificate instead of reusing it")
	}
}

// removeCgroupDir removes a cgroup the agent made, deepest first, in
// every mounted hierarchy.
func removeCgroupDir(rel string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, r := range roots {
		var dirs []string
		filepath.WalkDir(filepath.Join(r, rel), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			os.Remove(dirs[i])
		}
	}
}
