package e2e

import (
	"fmt"
	"testing"
	"time"
)

func TestZZPromoteProbe(t *testing.T) {
	c := newCluster(t, pkiInit(t), "e2e", "s1", "s2", "s3")
	c.bootstrap(t)
	c.join(t, "s4")
	waitForMember(t, c, "s4")
	c.join(t, "s5", "--learner")
	list := waitForMember(t, c, "s5")
	s5, _ := list.byName("s5")
	id := fmt.Sprintf("%x", s5.ID)
	for {
		r := run(t, c.etcdctlArgs(c.endpoints(), "member", "promote", id)...)
		t.Logf("promote: %d %s %s", r.code, r.stdout, r.stderr)
		if r.code == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	start := time.Now()
	for time.Since(start) < 1*time.Second {
		for _, m := range c.members {
			for _, cons := range []string{"l", "s"} {
				var l ctlMemberList
				c.etcdctlJSON(t, &l, m.storeURL(), "member", "list", "--consistency", cons)
				x, _ := l.byName("s5")
				t.Logf("%v %s %s learner=%v", time.Since(start), m.name, cons, x.IsLearner)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
