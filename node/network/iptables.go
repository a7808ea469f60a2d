package network

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"

	"cairn/internal/nsthread"
)

// Chains the network owns, one per table, each reached by one jump rule
// from a built-in chain.
const (
	masqChain    = "CAIRN-POSTROUTING"
	forwardChain = "CAIRN-FORWARD"
)

// jump is a rule that sends traffic into one of our chains.
type jump struct {
	table, chain, target, comment string
	insert                        bool
}

func (j jump) spec() []string {
	return []string{j.chain, "-m", "comment", "--comment", j.comment, "-j", j.target}
}

// jumps returns the rules that send traffic into our chains.
func jumps() []jump {
	return []jump{
		{"nat", "POSTROUTING", masqChain, "cairn: masquerade pod egress", false},
		// First in FORWARD, ahead of a DROP that Docker or a firewall may add.
		{"filter", "FORWARD", forwardChain, "cairn: forward pod traffic", true},
	}
}

// egressRules are the node's rules for its pods' traffic, in the node's
// namespace (netns, the caller's when empty): traffic from the pod range
// to outside cluster (or, without a cluster range, outside the pod
// range) is masqueraded, and forwarding to and from the pod range is
// accepted.
type egressRules struct {
	netns   string
	cluster netip.Prefix
}

// iptables runs iptables in the node's namespace.
func (r egressRules) iptables(args ...string) error {
	return r.runIn(nil, "iptables", append([]string{"-w", "5"}, args...)...)
}

// runIn runs a command with stdin in the node's namespace.
func (r egressRules) runIn(stdin []byte, name string, args ...string) error {
	_, err := r.output(stdin, name, args...)
	return err
}

// output runs a command with stdin in the node's namespace and returns
// its standard output. A missing iptables tool gets an error that says
// what to install.
func (r egressRules) output(stdin []byte, name string, args ...string) ([]byte, error) {
	var out []byte
	err := nsthread.Run(r.netns, func() error {
		cmd := exec.Command(name, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		var err error
		out, err = cmd.Output()
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("network: %w: the node's pod network needs %s from the iptables package (apt-get install iptables, dnf install iptables)", err, name)
		}
		if err != nil {
			return fmt.Errorf("network: %s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(append(out, stderr.Bytes()...)))
		}
		return nil
	})
	return out, err
}

// ensure makes our chains hold exactly the rules for prefix, in one
// iptables-restore transaction per run, and adds the jumps to them.
func (r egressRules) ensure(prefix netip.Prefix) error {
	exempt := r.cluster
	if !exempt.IsValid() {
		exempt = prefix
	}
	pod := prefix.String()
	rules := fmt.Sprintf(`*nat
:%[1]s - [0:0]
-A %[1]s -s %[3]s -d %[4]s -m comment --comment "cairn: pod to pod keeps its source" -j RETURN
-A %[1]s -s %[3]s -m comment --comment "cairn: pod egress" -j MASQUERADE
COMMIT
*filter
:%[2]s - [0:0]
-A %[2]s -s %[3]s -j ACCEPT
-A %[2]s -d %[3]s -j ACCEPT
COMMIT
`, masqChain, forwardChain, pod, exempt)
	if err := r.runIn([]byte(rules), "iptables-restore", "-w", "5", "--noflush"); err != nil {
		return err
	}
	for _, j := range jumps() {
		spec := j.spec()
		if r.iptables(append([]string{"-t", j.table, "-C"}, spec...)...) == nil {
			continue
		}
		op := "-A"
		if j.insert {
			op = "-I"
		}
		if err := r.iptables(append([]string{"-t", j.table, op}, spec...)...); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the jumps and our chains, if present.
func (r egressRules) remove() error {
	var errs []error
	for _, j := range jumps() {
		spec := j.spec()
		for r.iptables(append([]string{"-t", j.table, "-C"}, spec...)...) == nil {
			if err := r.iptables(append([]string{"-t", j.table, "-D"}, spec...)...); err != nil {
				errs = append(errs, err)
				break
			}
		}
		if r.iptables("-t", j.table, "-S", j.target) != nil {
			continue // no such chain
		}
		errs = append(errs, r.iptables("-t", j.table, "-F", j.target), r.iptables("-t", j.table, "-X", j.target))
	}
	return errors.Join(errs...)
}
