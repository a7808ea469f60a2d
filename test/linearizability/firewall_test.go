package linearizability

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// chainPrefix starts the name of every iptables chain this test creates;
// the test's pid completes it so that parallel runs keep apart.
const chainPrefix = "CAIRN-LIN-"

// firewall cuts links between replicas with DROP rules in a dedicated
// iptables chain hooked into INPUT and OUTPUT.
type firewall struct {
	iptables string
	chain    string
}

// privileges decides whether partition faults can run. It returns a
// firewall when they can; otherwise it fails the test when
// CAIRN_REQUIRE_PRIVILEGED=1, or logs why they are skipped and returns nil.
func privileges(t *testing.T) *firewall {
	var why string
	path, err := exec.LookPath("iptables")
	switch {
	case os.Geteuid() != 0:
		why = "not running as root"
	case err != nil:
		why = "iptables not found (Debian package iptables)"
	}
	if why == "" {
		fw, err := newFirewall(t, path)
		if err == nil {
			return fw
		}
		why = err.Error()
	}
	if os.Getenv("CAIRN_REQUIRE_PRIVILEGED") == "1" {
		t.Fatalf("partition faults need root and iptables: %s (CAIRN_REQUIRE_PRIVILEGED=1)", why)
	}
	t.Logf("SKIPPING partition faults: %s; kill and pause faults still run", why)
	return nil
}

// newFirewall creates the chain and hooks it in; the chain is removed when
// the test ends, whatever happens to the test.
func newFirewall(t *testing.T, path string) (*firewall, error) {
	fw := &firewall{iptables: path, chain: fmt.Sprintf("%s%d", chainPrefix, os.Getpid())}
	fw.removeStale(t)
	if err := fw.run("-N", fw.chain); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := fw.remove(); err != nil {
			t.Errorf("removing iptables chain %s: %v", fw.chain, err)
		}
	})
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		if err := fw.run("-I", hook, "1", "-j", fw.chain); err != nil {
			return nil, err
		}
	}
	return fw, nil
}

// cut drops all traffic between two replicas, both ways. Rules name the
// replicas' ports as well as their addresses, so that a run never cuts the
// cluster of another run on the same loopback addresses.
func (fw *firewall) cut(a, b *member) error {
	for _, pair := range [][2]*member{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		// Packets to the listening ports of to, and replies from those of from.
		for _, match := range [][]string{{"--dports", portList(to.ports)}, {"--sports", portList(from.ports)}} {
			args := append([]string{"-A", fw.chain, "-s", from.ip, "-d", to.ip, "-p", "tcp", "-m", "multiport"}, match...)
			if err := fw.run(append(args, "-j", "DROP")...); err != nil {
				return err
			}
		}
	}
	return nil
}

func portList(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// heal removes every cut.
func (fw *firewall) heal() error { return fw.run("-F", fw.chain) }

// remove unhooks, flushes and deletes the chain.
func (fw *firewall) remove() error {
	var errs []error
	for _, hook := range []string{"INPUT", "OUTPUT"} {
		// Repeat in case a hook was added twice; stop at the first miss.
		for fw.run("-C", hook, "-j", fw.chain) == nil {
			if err := fw.run("-D", hook, "-j", fw.chain); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	if err := fw.run("-F", fw.chain); err != nil {
		errs = append(errs, err)
	}
	if err := fw.run("-X", fw.chain); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeStale deletes chains left by runs of this test whose process is
// gone (killed before its cleanups ran), so they cannot cut this run.
func (fw *firewall) removeStale(t *testing.T) {
	out, err := exec.Command(fw.iptables, "-w", "5", "-S").Output()
	if err != nil {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "-N "+chainPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		stale := &firewall{iptables: fw.iptables, chain: chainPrefix + name}
		if err := stale.remove(); err != nil {
			t.Logf("removing stale iptables chain %s: %v", stale.chain, err)
		} else {
			t.Logf("removed stale iptables chain %s", stale.chain)
		}
	}
}

func (fw *firewall) run(args ...string) error {
	out, err := exec.Command(fw.iptables, append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("linearizability: iptables %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
