package devcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ruleComment marks every iptables rule `cairn dev` adds on the host, so
// that a sweep finds them. It has no spaces, which keeps `iptables -S`
// output splittable on blanks.
const ruleComment = "cairn-dev"

// hostRule is one iptables rule on the host.
type hostRule struct {
	table, chain string
	// insert puts the rule first in its chain, ahead of a DROP a
	// firewall or Docker may have added.
	insert bool
	spec   []string
}

// hostRules let the nodes' traffic through the host's FORWARD chain and
// masquerade it when it leaves the machine, so that agents can pull
// images and pods can reach the outside.
func hostRules() []hostRule {
	c := []string{"-m", "comment", "--comment", ruleComment}
	return []hostRule{
		{"filter", "FORWARD", true, append([]string{"-i", BridgeName}, append(c, "-j", "ACCEPT")...)},
		{"filter", "FORWARD", true, append([]string{"-o", BridgeName}, append(c, "-j", "ACCEPT")...)},
		{"nat", "POSTROUTING", false, append([]string{"-s", Subnet, "!", "-o", BridgeName}, append(c, "-j", "MASQUERADE")...)},
	}
}

// iptables runs iptables on the host.
func iptables(args ...string) (string, error) {
	cmd := exec.Command("iptables", append([]string{"-w", "5"}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("devcluster: iptables %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out.String(), nil
}

// haveIPTables reports whether the iptables command exists.
func haveIPTables() bool {
	_, err := exec.LookPath("iptables")
	return err == nil
}

// addHostRules adds hostRules.
func addHostRules() error {
	for _, r := range hostRules() {
		op := "-A"
		if r.insert {
			op = "-I"
		}
		if _, err := iptables(append([]string{"-t", r.table, op, r.chain}, r.spec...)...); err != nil {
			return err
		}
	}
	return nil
}

// removeHostRules deletes every rule carrying ruleComment from the chains
// hostRules use.
func removeHostRules() error {
	if !haveIPTables() {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, r := range hostRules() {
		key := r.table + "/" + r.chain
		if seen[key] {
			continue
		}
		seen[key] = true
		out, err := iptables("-t", r.table, "-S", r.chain)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, del := range markedRules(out) {
			if _, err := iptables(append([]string{"-t", r.table}, del...)...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// markedRules turns the "-A CHAIN ..." lines of `iptables -S` output that
// carry ruleComment into the arguments that delete them.
func markedRules(listing string) [][]string {
	var out [][]string
	for _, line := range strings.Split(listing, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "-A" || !hasComment(f) {
			continue
		}
		del := []string{"-D"}
		for _, field := range f[1:] {
			// iptables quotes values with blanks, which ours have not;
			// the quotes are not part of the value.
			del = append(del, strings.Trim(field, `"`))
		}
		out = append(out, del)
	}
	return out
}

func hasComment(fields []string) bool {
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "--comment" && strings.Trim(fields[i+1], `"`) == ruleComment {
			return true
		}
	}
	return false
}
