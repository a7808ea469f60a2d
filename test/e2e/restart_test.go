package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func testRestart(t *testing.T, c *cluster) {
	c.etcdctl(t, "put", "restart/before", "kept")
	s3 := c.member(t, "s3")
	if err := s3.stop(); err != nil {
		t.Errorf("s3 did not exit cleanly on SIGTERM: %v\n%s", err, s3.logTail(10))
	}
	// Written while s3 is down, so it must catch up on restart.
	for i := range 3 {
		c.etcdctl(t, "put", fmt.Sprintf("restart/k%d", i), "v")
	}

	tests := []struct {
		name  string
		flag  string
		value string
		want  []string
	}{
		{"WrongNameIsRefusedNamingTheRightOne", "--name", "s9", []string{`belongs to member "s3"`, "--name s3"}},
		{"AnotherClustersTokenIsRefused", "--initial-cluster-token", "another-cluster", []string{"belongs to cluster", "--initial-cluster-token"}},
		{"AnotherCAIsRefused", "--pki-dir", pkiInit(t), []string{"another cluster CA", "--pki-dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runRefused(t, tt.want, withFlag(t, s3.args, tt.flag, tt.value)...)
		})
	}

	s3.start(t, s3.args)
	s3.waitHealthy(t)
	// A serializable read is served from s3's own state.
	want := "restart/k0\nrestart/k1\nrestart/k2\n"
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := mustRun(t, c.etcdctlArgs(s3.storeURL(), "get", "restart/k", "--prefix", "--keys-only", "--consistency", "s")...).stdout
		if compact(out) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted s3 holds %q, want the keys written while it was down: %q", out, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := mustRun(t, c.etcdctlArgs(s3.storeURL(), "get", "restart/before", "--print-value-only", "--consistency", "s")...).stdout; out != "kept\n" {
		t.Errorf("restarted s3 lost the key written before its restart: got %q", out)
	}
}

// withFlag returns a copy of args with flag's value replaced.
func withFlag(t *testing.T, args []string, flag, value string) []string {
	t.Helper()
	out := slices.Clone(args)
	i := slices.Index(out, flag)
	if i < 0 || i+1 >= len(out) {
		t.Fatalf("e2e: %s not in %v", flag, args)
	}
	out[i+1] = value
	return out
}

// compact drops the empty lines etcdctl prints between keys.
func compact(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if line != "" {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
