package storebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn/internal/storebench/localcluster"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdBinary finds the real etcd that make bench builds into .tools/etcd at
// the repository root, or the one CAIRN_ETCD_BIN names, and skips the test
// when there is none: these tests measure real etcd, not a stand-in.
func etcdBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CAIRN_ETCD_BIN"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			bin := filepath.Join(dir, ".tools", "etcd")
			if _, err := os.Stat(bin); err == nil {
				return bin
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	t.Skip("real etcd not built: run `go build -C test/tools/etcd -o ../../../.tools/etcd .` " +
		"from the repository root (make bench does it once), or set CAIRN_ETCD_BIN")
	return ""
}

func startEtcd(t *testing.T, members int) *localcluster.Cluster {
	t.Helper()
	bin := etcdBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{
		Flavor: localcluster.Etcd, Binary: bin, Members: members, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

func TestPutAndGetAgainstRealEtcd(t *testing.T) {
	c := startEtcd(t, 1)
	rep, err := Run(context.Background(), Config{
		Endpoints: c.Endpoints(),
		Insecure:  true,
		Workload:  WorkloadAll,
		Clients:   4,
		Conns:     2,
		Duration:  300 * time.Millisecond,
		Keyspace:  500,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []struct {
		name    string
		clients int
	}{{"put", 4}, {"put", 1}, {"get-linearizable", 4}, {"get-serializable", 4}}
	for _, w := range want {
		t.Run(fmt.Sprintf("%s %d clients", w.name, w.clients), func(t *testing.T) {
			res, ok := rep.Find(w.name, w.clients)
			if !ok {
				t.Fatalf("no %s measurement with %d clients in %+v", w.name, w.clients, rep.Results)
			}
			if res.Ops == 0 || res.Errors != 0 || res.Throughput <= 0 {
				t.Errorf("%s: %d ops, %d errors (%s), %.0f/s", w.name, res.Ops, res.Errors, res.FirstError, res.Throughput)
			}
			if l := res.Latency; l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
				t.Errorf("%s: latencies out of order: %+v", w.name, l)
			}
		})
	}
	if rep.Failover != nil || len(rep.Notes) != 1 {
		t.Errorf("failover should be skipped with a note, got %+v, notes %q", rep.Failover, rep.Notes)
	}
	t.Run("benchmark keys are deleted", func(t *testing.T) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints()})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		resp, err := cli.Get(context.Background(), keyPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 0 {
			t.Errorf("%d keys left under %s (err %v)", resp.Count, keyPrefix, err)
		}
	})
}

func TestLeaderKillLosesNoAckedWriteOnRealEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the leader of a 3-member etcd cluster; takes several seconds")
	}
	c := startEtcd(t, 3)
	rep, err := Run(context.Background(), Config{
		Endpoints:   c.Endpoints(),
		Insecure:    true,
		Workload:    WorkloadFailover,
		Clients:     8,
		Conns:       2,
		Duration:    time.Second,
		KillCommand: c.KillCommand(),
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	f := rep.Failover
	if f == nil {
		t.Fatal("no failover result")
	}
	killed := 0
	for _, m := range c.Members {
		if m.Exited() {
			killed++
			if m.Name != f.KilledMember {
				t.Errorf("member %s exited, but the report says %s was killed", m.Name, f.KilledMember)
			}
		}
	}
	if killed != 1 {
		t.Errorf("%d members exited, want exactly the leader", killed)
	}
	if !f.Recovered || f.NewLeader == "" || f.NewLeader == f.KilledMember {
		t.Errorf("cluster did not recover: %+v", f)
	}
	if f.Acked == 0 || f.Lost != 0 || f.Verified != f.Acked {
		t.Errorf("acked %d, verified %d, lost %d (%v): want every acknowledged write back", f.Acked, f.Verified, f.Lost, f.LostKeys)
	}
	if f.LongestGap <= 0 || f.LongestGap > f.Elapsed {
		t.Errorf("longest gap %v in a %v run", f.LongestGap, f.Elapsed)
	}
	t.Logf("etcd failover: killed %s, new leader %s, longest gap %v, %d writes acknowledged", f.KilledMember, f.NewLeader, f.LongestGap, f.Acked)
}
