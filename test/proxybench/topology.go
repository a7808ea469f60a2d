package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// topology is the benchmark's network: a server namespace holding the
// backends, reached over a veth pair from each of two client namespaces.
// The "plain" client measures direct and eBPF connections; the "iptables"
// client holds the kube-proxy rule set, so its conntrack and NAT hooks
// never slow the other two modes down.
type topology struct {
	server, plain, iptables string // namespace names
	backends                []netip.Addr
}

const (
	clusterCIDR  = "10.244.0.0/16"
	serviceCIDR  = "10.96.0.0/12"
	backendCIDR  = "10.245.0.0/16"
	backendPort  = 8080
	netnsRunPath = "/run/netns/"
)

// newTopology creates the namespaces; cleanup deletes them, which takes
// their links, addresses, routes and iptables rules along.
func newTopology(prefix string, backends int, cleanup *cleanups) (*topology, error) {
	t := &topology{server: prefix + "-srv", plain: prefix + "-plain", iptables: prefix + "-ipt"}
	for _, ns := range []string{t.server, t.plain, t.iptables} {
		if err := run("ip", "netns", "add", ns); err != nil {
			return nil, err
		}
		cleanup.add("delete netns "+ns, func() error { return run("ip", "netns", "del", ns) })
		if err := run("ip", "-n", ns, "link", "set", "lo", "up"); err != nil {
			return nil, err
		}
	}
	links := []struct {
		client, peer, clientAddr, serverAddr, via string
	}{
		{t.plain, "vplain", "10.244.1.2/24", "10.244.1.1/24", "10.244.1.1"},
		{t.iptables, "vipt", "10.244.2.2/24", "10.244.2.1/24", "10.244.2.1"},
	}
	for _, l := range links {
		steps := [][]string{
			{"ip", "-n", l.client, "link", "add", "eth0", "type", "veth", "peer", "name", l.peer, "netns", t.server},
			{"ip", "-n", l.client, "addr", "add", l.clientAddr, "dev", "eth0"},
			{"ip", "-n", l.client, "link", "set", "eth0", "up"},
			{"ip", "-n", t.server, "addr", "add", l.serverAddr, "dev", l.peer},
			{"ip", "-n", t.server, "link", "set", l.peer, "up"},
			{"ip", "-n", l.client, "route", "add", backendCIDR, "via", l.via},
			// The iptables client needs a route to the cluster IPs for
			// connect() to get as far as the NAT hook.
			{"ip", "-n", l.client, "route", "add", serviceCIDR, "via", l.via},
		}
		for _, s := range steps {
			if err := run(s[0], s[1:]...); err != nil {
				return nil, err
			}
		}
	}
	for i := range backends {
		a := netip.AddrFrom4([4]byte{10, 245, byte(i / 250), byte(1 + i%250)})
		if err := run("ip", "-n", t.server, "addr", "add", a.String()+"/32", "dev", "lo"); err != nil {
			return nil, err
		}
		t.backends = append(t.backends, a)
	}
	return t, nil
}

func nsPath(name string) string { return netnsRunPath + name }

// run executes a setup command and reports its output on failure.
func run(name string, args ...string) error {
	return runInput(nil, name, args...)
}

func runInput(stdin []byte, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
