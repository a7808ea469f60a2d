package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRunbookBackupRestore backs up a bootstrapped cluster with
// docs/runbooks/backup-restore.md, loses it, and restores it onto three
// new machines with other addresses: the objects written before the
// backup are back, those written after it are not, and the old kubeconfig
// works through the load balancer, now pointed at the new machines.
func TestRunbookBackupRestore(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.bootstrap(t)
	blocks := readRunbook(t, "backup-restore.md")
	k := l.kubectl(t)
	k.must(t, "create", "namespace", "shop")
	for i := range 3 {
		k.must(t, "-n", "shop", "create", "configmap", fmt.Sprintf("before-%d", i), fmt.Sprintf("--from-literal=i=%d", i))
	}

	l.run(t, sections(t, blocks, "Back up")...)
	k.must(t, "-n", "shop", "create", "configmap", "after-backup")

	// The old cluster is gone; s1 keeps only the backups.
	for _, name := range []string{"s1", "s2", "s3"} {
		l.machine(name).unit("cairn-server").kill()
	}
	roles := map[string]string{"S1": "r1", "S2": "r2", "S3": "r3", "LB": "lb"}
	for _, name := range []string{"r1", "r2", "r3", "lb"} {
		l.machine(name).writeClusterEnv(roles)
	}
	l.run(t, sections(t, blocks, "Restore")...)

	out := k.must(t, "-n", "shop", "get", "configmaps", "-o", "jsonpath={range .items[*]}{.metadata.name}={.data.i} {end}")
	got := strings.Fields(out)
	for i := range 3 {
		if want := fmt.Sprintf("before-%d=%d", i, i); !slices.Contains(got, want) {
			t.Errorf("restored configmaps in shop: %q, want %s", out, want)
		}
	}
	if slices.Contains(got, "after-backup=") {
		t.Errorf("restored configmaps in shop: %q; after-backup was written after the backup", out)
	}
	list := l.members(t, l.machine("r1"), "https://"+l.machine("r1").ip+":2379")
	for _, m := range list.Members {
		if want := "https://" + l.machine("r"+m.Name[1:]).ip + ":2380"; len(m.PeerURLs) != 1 || m.PeerURLs[0] != want {
			t.Errorf("restored member %s has peer URLs %v, want %s", m.Name, m.PeerURLs, want)
		}
	}
	k.must(t, "-n", "shop", "create", "configmap", "after-restore")
	l.checkAllRun(t, blocks)
}
