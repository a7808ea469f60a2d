package lossbench

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"cairn/internal/privtest"
)

// detectTarget is how fast two peers must declare a killed agent dead:
// the node is to be NotReady within 3s, reports and the controller
// included.
const detectTarget = 3 * time.Second

func TestLossyLANHasNoFalseAgreementAndFastDetection(t *testing.T) {
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin)
	if _, err := exec.LookPath("iptables"); err != nil {
		privtest.Unavailable(t, "iptables is not installed (apt-get install iptables)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{Members: 5, Loss: 0.10, Period: 6 * time.Second, Kills: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	if rep.Dropped == 0 {
		t.Fatal("the loss rule dropped no packet: the run measured a lossless network")
	}
	if rep.FalseAgreements > 0 {
		t.Errorf("%d times two members declared a live member dead (%v): its node would have gone NotReady", rep.FalseAgreements, rep.FalselyDead)
	}
	if worst := rep.MaxSecond(); worst < 0 || worst > detectTarget {
		t.Errorf("a killed member was declared dead by two peers after %v, want at most %v", worst, detectTarget)
	}
}
