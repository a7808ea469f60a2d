package deploy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunbookQuorumLoss loses two of three servers of a bootstrapped
// cluster, checks what docs/runbooks/quorum-loss.md says still works, and
// follows both of its ways back: forcing a new cluster on the survivor and
// re-adding the others with a join token, then (after a second loss) the
// restore of the survivor's snapshot. Each time every write the survivor
// had applied is there, and the cluster takes writes again through the
// same load balancer.
func TestRunbookQuorumLoss(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	// The examples' 30 minutes, shortened for the test.
	l.unitEnv = []string{"CAIRN_SNAPSHOT_INTERVAL=1s"}
	l.bootstrap(t)
	blocks := readRunbook(t, "quorum-loss.md")
	k := l.kubectl(t)
	for i := range 3 {
		k.must(t, "create", "configmap", fmt.Sprintf("acked-%d", i), fmt.Sprintf("--from-literal=i=%d", i))
	}

	// Writes acknowledged in the last moment before the loss may not have
	// reached the survivor (the runbook says so): wait until one has.
	s1 := l.machine("s1")
	waitApplied(t, l, s1, "acked-2")
	lost := time.Now()
	l.lose("s2")
	l.lose("s3")

	t.Run("WhatWorksAndWhatDoesNot", func(t *testing.T) {
		// A request straight to s1 waits for a leader, for the server's
		// request timeout, and is answered 503 with Retry-After (kubectl
		// retries it); meanwhile HAProxy sees /readyz fail.
		direct := make(chan error, 1)
		go func() { direct <- checkNoLeaderAnswer(t, s1) }()
		haproxyLog := l.machine("lb").unit("haproxy").logPath()
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(readFileString(t, haproxyLog), "has no server available"); {
			if time.Now().After(deadline) {
				t.Fatalf("HAProxy still sends to s1:\n%s", tail(haproxyLog, 10))
			}
			time.Sleep(200 * time.Millisecond)
		}
		// HAProxy closes connections at once (kubectl then gives up
		// after its retries).
		start := time.Now()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", l.machine("lb").ip+":6443", &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			conn.Close()
			t.Errorf("HAProxy completed a TLS handshake with no server available")
		} else if time.Since(start) > 2*time.Second {
			t.Errorf("HAProxy took %s to refuse a connection (%v); the runbook says at once", time.Since(start), err)
		}
		if err := <-direct; err != nil {
			t.Error(err)
		}
		// cairn snapshot save gives up, and says why.
		func() {
			start := time.Now()
			out, err := l.runOn(s1, block{doc: "test", hosts: []string{"s1"}, text: `cairn snapshot save /var/backups/cairn/no-quorum.snap --endpoints "https://$S1:2379" --cacert "$ETCDCTL_CACERT" --cert "$ETCDCTL_CERT" --key "$ETCDCTL_KEY" --command-timeout 3s` + "\n"})
			switch {
			case err == nil:
				err = fmt.Errorf("cairn snapshot save worked without a quorum:\n%s", out)
			case time.Since(start) > 10*time.Second:
				err = fmt.Errorf("cairn snapshot save with --command-timeout 3s took %s", time.Since(start))
			case !strings.Contains(out, "no quorum") || !strings.Contains(out, "quorum-loss.md"):
				err = fmt.Errorf("cairn snapshot save without a quorum does not say so, nor point to the runbook:\n%s", out)
			default:
				err = nil
			}
			if err != nil {
				t.Error(err)
			}
		}()
		if out := l.sh(t, s1, `cairn etcdctl --endpoints "https://$S1:2379" get /registry/configmaps/default/acked-2 --keys-only --consistency=s`); !strings.Contains(out, "/registry/configmaps/default/acked-2") {
			t.Errorf("a serializable read on the survivor printed %q", out)
		}
		r, err := l.runOn(s1, block{doc: "test", hosts: []string{"s1"}, text: `cairn etcdctl --endpoints "https://$S1:2379" --command-timeout 3s get /registry/configmaps/default/acked-2 --keys-only` + "\n"})
		if err == nil {
			t.Errorf("a linearizable read on the survivor worked without a quorum:\n%s", r)
		}
		resp, err := http.Get("http://" + s1.ip + ":2381/health")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"reason":"no leader"`) {
			t.Errorf("/health on the survivor: %s %s", resp.Status, body)
		}
	})

	l.run(t, sections(t, blocks, "Force a new cluster", "Add s2 and s3 back")...)
	checkRecovered(t, k, 3, "after-force-new-cluster")
	if got := l.members(t, s1, "https://"+s1.ip+":2379"); !slices.Equal(got.names(), []string{"s1", "s2", "s3"}) || got.hasLearner() {
		t.Errorf("members %v (learner among them: %v) after forcing a new cluster and adding s2 and s3 back", got.names(), got.hasLearner())
	}

	// The same loss again, and the other way back.
	k.must(t, "create", "configmap", "acked-3", "--from-literal=i=3")
	waitApplied(t, l, s1, "acked-3")
	lost = time.Now()
	l.lose("s2")
	l.lose("s3")
	waitScheduledSnapshot(t, s1, lost)
	l.run(t, sections(t, blocks, "1. ", "2. ", "3. ", "4. ")...)
	checkRecovered(t, k, 4, "after-restore")
	l.checkAllRun(t, blocks)
}

// checkNoLeaderAnswer asks m's API for a configmap as the admin, without
// a client's retries, and checks the answer the runbook describes.
func checkNoLeaderAnswer(t *testing.T, m *machine) error {
	cert, err := tls.LoadX509KeyPair(m.path("/etc/cairn/pki/admin.crt"), m.path("/etc/cairn/pki/admin.key"))
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(readFileString(t, m.path("/etc/cairn/pki/ca.crt"))))
	cli := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots}}}
	start := time.Now()
	resp, err := cli.Get("https://" + m.ip + ":6443/api/v1/namespaces/default/configmaps/acked-0")
	if err != nil {
		return fmt.Errorf("GET straight to %s: %v", m.name, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "no leader") || took > 15*time.Second {
		return fmt.Errorf("GET straight to %s: %s (Retry-After %q) after %s: %s; the runbook says 503 with Retry-After and \"no leader\" after the request timeout (7s)", m.name, resp.Status, resp.Header.Get("Retry-After"), took, body)
	}
	return nil
}

// waitApplied waits until machine m has applied the creation of configmap
// name: a survivor learns that a write committed with the next message
// from the leader.
func waitApplied(t *testing.T, l *lab, m *machine, name string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out := l.sh(t, m, `cairn etcdctl --endpoints "https://$S1:2379" get /registry/configmaps/default/`+name+` --keys-only --consistency=s`)
		if strings.Contains(out, name) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not apply %s within 10s", m.name, name)
		}
	}
}

// waitScheduledSnapshot waits for a scheduled snapshot m writes after
// lost, as the runbook asks.
func waitScheduledSnapshot(t *testing.T, m *machine, lost time.Time) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		files, _ := filepath.Glob(m.path("/var/lib/cairn/server/snapshots/*.snap"))
		for _, f := range files {
			if fi, err := statTime(f); err == nil && fi.After(lost) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s wrote no scheduled snapshot after the loss: %v", m.name, files)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkRecovered checks that the acked configmaps 0 to n-1, which the
// survivor had applied before the loss, are in the recovered cluster, and
// that it takes a write, named created.
func checkRecovered(t *testing.T, k kubectl, n int, created string) {
	t.Helper()
	out := k.must(t, "get", "configmaps", "-o", "jsonpath={range .items[*]}{.metadata.name} {end}")
	for i := range n {
		if !strings.Contains(out, fmt.Sprintf("acked-%d ", i)) {
			t.Errorf("acked-%d had reached the survivor before the loss but is not in the recovered cluster: %q", i, out)
		}
	}
	k.must(t, "create", "configmap", created)
}
