package e2e

import (
	"fmt"
	"testing"
	"time"
)

func testJoin(t *testing.T, c *cluster) {
	c.etcdctl(t, "put", "join/before", "v")
	c.join(t, "s4")
	list := waitForMember(t, c, "s4")
	if s4, _ := list.byName("s4"); s4.IsLearner {
		t.Errorf("s4 joined without --learner but is listed as a learner")
	}
	if len(list.Members) != 4 {
		t.Errorf("member list has %d members after s4 joined, want 4: %+v", len(list.Members), list.Members)
	}
	if out := mustRun(t, c.etcdctlArgs(c.member(t, "s4").storeURL(), "get", "join/before", "--print-value-only")...).stdout; out != "v\n" {
		t.Errorf("s4 does not serve the cluster's data: get join/before printed %q", out)
	}

	c.join(t, "s5", "--learner")
	list = waitForMember(t, c, "s5")
	s5, _ := list.byName("s5")
	if !s5.IsLearner {
		t.Fatalf("s5 joined with --learner but member list does not show it as a learner: %+v", s5)
	}

	// A learner may be refused promotion until it has caught up.
	id := fmt.Sprintf("%x", s5.ID)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := run(t, c.etcdctlArgs(c.endpoints(), "member", "promote", id)...)
		if r.code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member promote %s kept failing:\n%s", id, r)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Every member must list s5 as a voter once the promotion is acked: a
	// linearizable member list reflects every committed change.
	for _, m := range c.members {
		c.etcdctlJSON(t, &list, m.storeURL(), "member", "list")
		if s5, ok := list.byName("s5"); !ok || s5.IsLearner {
			t.Errorf("after member promote, %s lists s5 as %+v (listed: %v), want a voter", m.name, s5, ok)
		}
	}
	if out := c.etcdctl(t, "put", "after-join", "v"); out != "OK\n" {
		t.Errorf("five-member cluster refused a write: %q", out)
	}
}

// waitForMember waits until member list shows name with its URLs, which a
// joining member publishes once it runs.
func waitForMember(t *testing.T, c *cluster, name string) ctlMemberList {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list ctlMemberList
		c.etcdctlJSON(t, &list, c.endpoints(), "member", "list")
		if m, ok := list.byName(name); ok && len(m.ClientURLs) > 0 {
			return list
		}
		if time.Now().After(deadline) {
			t.Fatalf("member list does not show %s: %+v", name, list.Members)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
