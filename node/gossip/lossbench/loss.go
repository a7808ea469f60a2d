package lossbench

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// lossComment marks the rule, to find its counters.
const lossComment = "cairn-lossbench"

// addLoss makes the namespace drop each packet with probability p: every
// packet on loopback crosses INPUT once, so this is p on every hop, both
// ways, for UDP and TCP alike.
func (ns *netns) addLoss(p float64) error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("lossbench: iptables is not installed (apt-get install iptables): %w", err)
	}
	return ns.do(func() error {
		return run("iptables", "-A", "INPUT", "-m", "statistic", "--mode", "random",
			"--probability", strconv.FormatFloat(p, 'f', 4, 64),
			"-m", "comment", "--comment", lossComment, "-j", "DROP")
	})
}

// dropped returns how many packets the loss rule dropped.
func (ns *netns) dropped() (uint64, error) {
	var out []byte
	err := ns.do(func() error {
		var err error
		out, err = exec.Command("iptables", "-L", "INPUT", "-v", "-x", "-n").Output()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("lossbench: reading the loss rule's counters: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, lossComment) {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 0 {
			return strconv.ParseUint(fields[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("lossbench: the loss rule is gone")
}
