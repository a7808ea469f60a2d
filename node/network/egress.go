package network

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"

	"cairn/internal/nsthread"
)

// Egress keeps the node's forwarding and masquerading rules for a pod
// range whose pods something else attaches: containerd's CNI bridge,
// under the CRI runtime. They are the rules Network keeps for its own
// pods, node-wide, so pod-to-pod traffic across nodes keeps its source
// address there too. The bridge plugin's own masquerading cannot do
// that (it exempts only the node's pod range) and costs several
// iptables runs per pod.
type Egress struct {
	rules egressRules
	// mu orders changes of the rules.
	mu sync.Mutex
}

// NewEgress returns the egress rules of the node in netns (the caller's
// when empty); traffic to clusterCIDR, if given, is not masqueraded.
// Nothing changes until SetPodCIDR.
func NewEgress(netns, clusterCIDR string) (*Egress, error) {
	cluster, err := parseClusterCIDR(clusterCIDR)
	if err != nil {
		return nil, err
	}
	return &Egress{rules: egressRules{netns: netns, cluster: cluster}}, nil
}

// SetPodCIDR enables IP forwarding and makes the rules match the node's
// IPv4 pod range. It is idempotent, and repairs rules removed behind
// its back.
func (e *Egress) SetPodCIDR(cidr string) error {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() {
		return fmt.Errorf("network: pod CIDR %q is not an IPv4 prefix", cidr)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := enableForwarding(e.rules.netns); err != nil {
		return err
	}
	return e.rules.ensure(prefix.Masked())
}

// Teardown removes the rules.
func (e *Egress) Teardown() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rules.remove()
}

// DropCNIMasquerade removes the per-pod masquerading the CNI bridge
// plugin set up for the CNI network named network while it was
// configured to (ipMasq): a jump from nat POSTROUTING, commented with
// the network and the container, to a chain of its own. The plugin
// removes them only while still so configured, so once the agent's
// rules took over, such a rule would outlive its pod and rewrite the
// source of the next pod given its address.
func (e *Egress) DropCNIMasquerade(network string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	saved, err := e.rules.output(nil, "iptables-save", "-t", "nat")
	if err != nil {
		return err
	}
	// iptables-save quotes the comment as iptables-restore reads it, so
	// its rules can be deleted as written.
	owner := fmt.Sprintf(`--comment "name: \"%s\" id: `, network)
	var script strings.Builder
	var chains []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(saved), "\n") {
		rule, ok := strings.CutPrefix(line, "-A POSTROUTING ")
		if !ok || !strings.Contains(rule, owner) {
			continue
		}
		_, chain, _ := strings.Cut(rule, " -j ")
		if !strings.HasPrefix(chain, "CNI-") || strings.Contains(chain, " ") {
			continue
		}
		fmt.Fprintf(&script, "-D POSTROUTING %s\n", rule)
		if !seen[chain] {
			seen[chain] = true
			chains = append(chains, chain)
		}
	}
	if len(chains) == 0 {
		return nil
	}
	for _, c := range chains {
		fmt.Fprintf(&script, "-F %s\n-X %s\n", c, c)
	}
	return e.rules.runIn([]byte("*nat\n"+script.String()+"COMMIT\n"), "iptables-restore", "-w", "5", "--noflush")
}

// parseClusterCIDR parses the cluster's pod range; empty is none.
func parseClusterCIDR(cidr string) (netip.Prefix, error) {
	if cidr == "" {
		return netip.Prefix{}, nil
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("network: cluster CIDR %q is not an IPv4 prefix", cidr)
	}
	return p.Masked(), nil
}

// enableForwarding turns on IPv4 forwarding in the namespace at netns.
func enableForwarding(netns string) error {
	if err := nsthread.Run(netns, func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	}); err != nil {
		return fmt.Errorf("network: enabling IP forwarding: %w", err)
	}
	return nil
}
