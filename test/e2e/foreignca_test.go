package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testForeignClientRefused(t *testing.T, c *cluster) {
	other := pkiInit(t)
	s1 := c.members[0]
	r := run(t, "etcdctl", "--endpoints", s1.storeURL(),
		"--cacert", filepath.Join(c.pki, "ca.crt"),
		"--cert", filepath.Join(other, "admin.crt"),
		"--key", filepath.Join(other, "admin.key"),
		"--dial-timeout", "1s", "--command-timeout", "1s",
		"put", "intruder", "was-here")
	if r.code == 0 {
		t.Fatalf("a client certificate from another CA was accepted:\n%s", r)
	}
	if out := c.etcdctl(t, "get", "intruder"); out != "" {
		t.Errorf("the refused client's write is in the store: %q", out)
	}
	// The refusal is logged at the handshake; allow the log a moment.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s1.log(), "different CA") {
		if time.Now().After(deadline) {
			t.Fatalf("s1's log does not say the client was refused for a different CA:\n%s", s1.logTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
