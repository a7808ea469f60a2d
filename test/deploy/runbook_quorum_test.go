package deploy

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunbookQuorumLoss loses two of three servers of a bootstrapped
// cluster, checks what docs/runbooks/quorum-loss.md says still works, and
// follows it back: every write the survivor had applied is there, and the
// cluster takes writes again through the same load balancer.
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

	// The survivor learns that a write committed with the next message
	// from the leader; writes acknowledged in the last moment before the
	// loss may not have reached it (the runbook says so).
	s1 := l.machine("s1")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out := l.sh(t, s1, `cairn etcdctl --endpoints "https://$S1:2379" get /registry/configmaps/default/acked-2 --keys-only --consistency=s`)
		if strings.Contains(out, "acked-2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("s1 did not apply acked-2 within 10s")
		}
	}
	lost := time.Now()
	l.lose("s2")
	l.lose("s3")

	t.Run("WhatWorksAndWhatDoesNot", func(t *testing.T) {
		// A request straight to s1 waits for a leader, for the server's
		// request timeout; meanwhile HAProxy sees /readyz fail.
		direct := make(chan error, 1)
		go func() {
			start := time.Now()
			_, err := k.run(30*time.Second, "--server", "https://"+s1.ip+":6443", "get", "configmap", "acked-0")
			if err == nil || !strings.Contains(err.Error(), "no leader") || time.Since(start) > 15*time.Second {
				err = fmt.Errorf("kubectl straight to s1: %v after %s; the runbook says it fails with \"no leader\" after the request timeout (7s)", err, time.Since(start))
			} else {
				err = nil
			}
			direct <- err
		}()
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

	// The runbook waits for a scheduled snapshot written after the loss.
	deadline := time.Now().Add(20 * time.Second)
	for {
		files, _ := filepath.Glob(s1.path("/var/lib/cairn/server/snapshots/*.snap"))
		newer := false
		for _, f := range files {
			if fi, err := statTime(f); err == nil && fi.After(lost) {
				newer = true
			}
		}
		if newer {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("s1 wrote no scheduled snapshot after the loss: %v", files)
		}
		time.Sleep(200 * time.Millisecond)
	}

	l.run(t, blocks...)
	out := k.must(t, "get", "configmaps", "-o", "jsonpath={range .items[*]}{.metadata.name} {end}")
	for i := range 3 {
		if !strings.Contains(out, fmt.Sprintf("acked-%d ", i)) {
			t.Errorf("acked-%d had reached the survivor before the loss but is not in the restored cluster: %q", i, out)
		}
	}
	k.must(t, "create", "configmap", "after-recovery")
	l.checkAllRun(t, blocks)
}
