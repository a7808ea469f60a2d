package deploy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/privtest"
	"cairn/node/network"
)

// requireAgent fails the test when the binary under test has no agent.
func requireAgent(t *testing.T) {
	t.Helper()
	if err := exec.Command(cairnBin(t), "agent", "--help").Run(); err != nil {
		t.Fatalf("%s has no `cairn agent` (%v): build it with make build", cairnBin(t), err)
	}
}

// TestRunbookNodes adds node n1 to a bootstrapped cluster with
// docs/runbooks/nodes.md (with a join token, so that n1 never holds the CA
// key), cordons, drains and uncordons it, then removes
// it. The agent's pod network lives in a network namespace of the test's
// and its pods' cgroups under a cgroup of the test's, so the test machine's
// own network and cgroups are left alone.
func TestRunbookNodes(t *testing.T) {
	t.Parallel()
	requireAgent(t)
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin)
	netns := filepath.Join(t.TempDir(), "n1.netns")
	if err := network.NewNetNS(netns); err != nil {
		privtest.Unavailable(t, "cannot create a network namespace: %v", err)
	}
	t.Cleanup(func() { network.RemoveNetNS(netns) })

	l := newLab(t)
	// The eBPF proxy is off: it would attach to the machine's root cgroup
	// and pin there, and the runbook is about the node's lifecycle.
	l.unitEnv = []string{"CAIRN_NETNS=" + netns, fmt.Sprintf("CAIRN_CGROUP_ROOT=/cairn-deploy-test-%d", rand.Uint32()), "CAIRN_PROXY=none"}
	// The embedded runtime's directory of sandbox namespaces.
	t.Cleanup(func() { os.Remove("/run/cairn/netns/n1") })
	l.bootstrap(t)
	blocks := readRunbook(t, "nodes.md")
	k := l.kubectl(t)
	n1 := l.machine("n1")

	l.run(t, sections(t, blocks, "Add a node")...)
	out := k.must(t, "get", "node", "n1", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address} {.metadata.labels.topology\.kubernetes\.io/zone}`)
	if want := n1.ip + " zone-a"; out != want {
		t.Errorf("node n1: address and zone %q, want %q", out, want)
	}

	if _, err := os.Stat(n1.path("/etc/cairn/pki/ca.key")); !os.IsNotExist(err) {
		t.Errorf("n1 holds the CA key after joining with a token: %v", err)
	}

	unschedulable := func() string {
		return k.must(t, "get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}")
	}
	drain := sections(t, blocks, "Cordon, drain and uncordon")
	if len(drain) != 2 {
		t.Fatalf("the drain section has %d blocks; the test expects cordon+drain, then uncordon", len(drain))
	}
	l.run(t, drain[0])
	if got := unschedulable(); got != "true" {
		t.Errorf("after cordon and drain, n1 is unschedulable=%q", got)
	}
	l.run(t, drain[1])
	if got := unschedulable(); got == "true" {
		t.Errorf("after uncordon, n1 is still unschedulable")
	}

	l.run(t, sections(t, blocks, "Remove a node")...)
	if n1.unit("cairn-agent").running() {
		t.Errorf("n1's agent still runs after its removal")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := k.run(30*time.Second, "get", "node", "n1")
		if err != nil && strings.Contains(err.Error(), "NotFound") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node n1 still exists after its removal: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	l.checkAllRun(t, blocks)
}
