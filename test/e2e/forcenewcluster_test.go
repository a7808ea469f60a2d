package e2e

import (
	"strings"
	"testing"
)

// TestForceNewClusterRecoversFromLostQuorum loses two of three servers for
// good (SIGKILL, data dirs abandoned) and restarts the survivor with
// --force-new-cluster: it serves every object it held, takes writes again,
// and a new server then joins it with a token.
func TestForceNewClusterRecoversFromLostQuorum(t *testing.T) {
	c := newTokenCluster(t, "s1", "s2", "s3")
	c.bootstrap(t)
	s1 := c.member(t, "s1")
	admin := c.kubeconfig(t, s1)
	k := newKubectl(t, admin)
	k.waitReady(t)
	k.must(t, "create", "configmap", "before", "--from-literal=k=v")

	for _, name := range []string{"s2", "s3"} {
		m := c.member(t, name)
		if err := m.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-m.done
	}
	s1.stop()

	t.Run("refused on a data dir without state", func(t *testing.T) {
		m := c.newJoiner(t, "empty")
		runRefused(t, []string{"--force-new-cluster", "holds no member"}, c.args(m, "--pki-dir", c.pki, "--force-new-cluster")...)
	})

	s1.start(t, append(s1.args, "--force-new-cluster"))
	s1.waitHealthy(t)
	if !strings.Contains(s1.log(), "FORCED A NEW CLUSTER") {
		t.Errorf("the survivor does not log what --force-new-cluster did:\n%s", s1.logTail(20))
	}
	if out := k.must(t, "get", "configmap", "before", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Fatalf("after --force-new-cluster, configmap before reads %q", out)
	}
	k.must(t, "create", "configmap", "after", "--from-literal=k=v")
	var list ctlMemberList
	c.etcdctlJSON(t, &list, c.endpoints(s1), "member", "list")
	if len(list.Members) != 1 || list.Members[0].Name != "s1" {
		t.Fatalf("member list after --force-new-cluster: %+v", list.Members)
	}

	s4 := c.joinWithToken(t, "s4", s1, serverToken(t, s1))
	c.etcdctlJSON(t, &list, c.endpoints(s1), "member", "list")
	if len(list.Members) != 2 {
		t.Fatalf("member list after s4 joined: %+v", list.Members)
	}
	k4 := newKubectl(t, c.kubeconfig(t, s4))
	k4.waitReady(t)
	if out := k4.must(t, "get", "configmap", "-o", "name"); !strings.Contains(out, "configmap/before") || !strings.Contains(out, "configmap/after") {
		t.Errorf("s4 serves configmaps %q, want before and after", out)
	}
}
