package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func testSnapshotRestore(t *testing.T, c *cluster) {
	// History worth restoring: several keys, an overwrite and a delete.
	for i := range 5 {
		c.etcdctl(t, "put", fmt.Sprintf("snap/k%d", i), fmt.Sprintf("v%d", i))
	}
	c.etcdctl(t, "put", "snap/k0", "v0-again")
	c.etcdctl(t, "put", "snap/gone", "x")
	c.etcdctl(t, "del", "snap/gone")
	var source ctlRange
	c.etcdctlJSON(t, &source, c.endpoints(), "get", "", "--prefix")
	rev := source.Header.Revision

	file := filepath.Join(t.TempDir(), "backup.snap")
	save := mustRun(t, append([]string{"snapshot", "save", file, "--endpoints", c.members[0].storeURL()}, c.clientFlags()...)...)
	if !strings.Contains(save.stdout, fmt.Sprintf("revision %d,", rev)) {
		t.Errorf("snapshot save does not report revision %d:\n%s", rev, save)
	}

	status := snapshotStatus(t, file)
	if got := status["revision"]; got != strconv.FormatInt(rev, 10) {
		t.Errorf("snapshot status revision %q, want %d", got, rev)
	}
	if got := status["keys"]; got != strconv.Itoa(len(source.KVs)) {
		t.Errorf("snapshot status keys %q, want %d", got, len(source.KVs))
	}
	if got, want := status["source cluster"], fmt.Sprintf("%016x", source.Header.ClusterID); got != want {
		t.Errorf("snapshot status source cluster %q, want %s", got, want)
	}
	sourceHashes := hashKV(t, c, c.endpoints(), rev)
	sourceHash, ok := agreedHash(sourceHashes)
	if !ok {
		t.Fatalf("source replicas disagree at revision %d: %s", rev, describeHashes(sourceHashes))
	}
	if got := status["hash (HashKV)"]; got != fmt.Sprint(sourceHash) {
		t.Errorf("snapshot status hash %q, but etcdctl endpoint hashkv --rev %d on the source says %d", got, rev, sourceHash)
	}

	t.Run("TruncatedFileIsRefused", func(t *testing.T) { testTruncatedSnapshot(t, file) })

	t.Run("EtcdctlSnapshotSaveGivesTheSameFile", func(t *testing.T) {
		// etcd's own client checks the stream's trailing SHA-256 too.
		viaEtcdctl := filepath.Join(t.TempDir(), "etcdctl.snap")
		mustRun(t, c.etcdctlArgs(c.members[1].storeURL(), "snapshot", "save", viaEtcdctl)...)
		st := snapshotStatus(t, viaEtcdctl)
		if st["revision"] != status["revision"] || st["hash (HashKV)"] != status["hash (HashKV)"] {
			t.Fatalf("etcdctl's snapshot: revision %s hash %s, cairn's: revision %s hash %s",
				st["revision"], st["hash (HashKV)"], status["revision"], status["hash (HashKV)"])
		}
	})

	restored := newCluster(t, c.pki, "restored", "r1", "r2", "r3")
	for _, m := range restored.members {
		mustRun(t, "snapshot", "restore", file, "--name", m.name, "--data-dir", m.dataDir,
			"--initial-cluster", restored.initialCluster(), "--initial-cluster-token", restored.token,
			"--pki-dir", c.pki)
	}
	restored.bootstrap(t)

	// The restored cluster's first leader records its epoch (one more
	// revision); everything up to the snapshot's revision is as it was.
	var got ctlRange
	restored.etcdctlJSON(t, &got, restored.endpoints(), "get", "", "--prefix", fmt.Sprintf("--rev=%d", rev))
	if got.Header.Revision < rev {
		t.Errorf("restored cluster is at revision %d, want at least the snapshot's %d", got.Header.Revision, rev)
	}
	if !reflect.DeepEqual(got.KVs, source.KVs) {
		t.Errorf("restored keys differ from the source at revision %d:\nrestored %s\nsource   %s", rev, describeKVs(got.KVs), describeKVs(source.KVs))
	}
	restoredHashes := hashKV(t, restored, restored.endpoints(), rev)
	if h, ok := agreedHash(restoredHashes); !ok || h != sourceHash || len(restoredHashes) != 3 {
		t.Errorf("restored hashkv at revision %d: %s; want %d on all three, as on the source", rev, describeHashes(restoredHashes), sourceHash)
	}

	var list ctlMemberList
	restored.etcdctlJSON(t, &list, restored.endpoints(), "member", "list")
	for _, m := range restored.members {
		if _, ok := list.byName(m.name); !ok {
			t.Errorf("restored member list has no %s: %+v", m.name, list.Members)
		}
	}
	if len(list.Members) != 3 {
		t.Errorf("restored member list has %d members, want 3: %+v", len(list.Members), list.Members)
	}
	if list.Header.ClusterID == source.Header.ClusterID {
		t.Errorf("restored cluster kept the source cluster ID %x; a restore makes a new cluster", list.Header.ClusterID)
	}
	var put struct{ Header ctlHeader }
	restored.etcdctlJSON(t, &put, restored.endpoints(), "put", "after-restore", "v")
	if put.Header.Revision <= rev {
		t.Errorf("a write to the restored cluster got revision %d, want above the snapshot's %d", put.Header.Revision, rev)
	}
}

func testTruncatedSnapshot(t *testing.T, file string) {
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) <= 100 {
		t.Fatalf("snapshot is only %d bytes", len(whole))
	}
	cut := filepath.Join(t.TempDir(), "cut.snap")
	if err := os.WriteFile(cut, whole[:len(whole)-100], 0o600); err != nil {
		t.Fatal(err)
	}
	runRefused(t, []string{"corrupt or truncated"}, "snapshot", "status", cut)
	dataDir := filepath.Join(t.TempDir(), "restored")
	runRefused(t, []string{"corrupt or truncated"}, "snapshot", "restore", cut,
		"--name", "r1", "--data-dir", dataDir, "--initial-cluster", "r1=127.0.0.1:2380")
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("a refused restore left %s behind (stat: %v)", dataDir, err)
	}
}

// snapshotStatus runs `cairn snapshot status` and returns its fields.
func snapshotStatus(t *testing.T, file string) map[string]string {
	t.Helper()
	r := mustRun(t, "snapshot", "status", file)
	fields := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	for _, k := range []string{"revision", "keys", "source cluster", "hash (HashKV)"} {
		if fields[k] == "" {
			t.Fatalf("snapshot status prints no %q:\n%s", k, r)
		}
	}
	return fields
}

func describeKVs(kvs []ctlKV) string {
	var parts []string
	for _, kv := range kvs {
		parts = append(parts, fmt.Sprintf("%s=%s(c%d,m%d,v%d)", kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, kv.Version))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
