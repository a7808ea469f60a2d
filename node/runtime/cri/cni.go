package cri

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

// CNI defaults: the network, its bridge, its file in the CNI config
// directory, and the CNI spec version the conflist is written in (the
// plugins of Debian 12 and containerd 1.6 both speak it).
const (
	DefaultCNINetwork  = "cairn"
	DefaultCNIBridge   = "cairn0"
	CNIConfFile        = "10-cairn.conflist"
	DefaultCNIConfDir  = "/etc/cni/net.d"
	cniSpecVersion     = "1.0.0"
	defaultIPv4Route   = "0.0.0.0/0"
	defaultIPv6Route   = "::/0"
	cniConfPermissions = 0o644
)

// CNIConfig is the node's pod network as containerd sets it up through
// CNI: a bridge that is the pods' gateway, addresses from the node's
// podCIDR (host-local IPAM), and host ports (portmap). containerd adds
// the loopback plugin for every pod itself, from the same bin dir, so
// the chain does not list it. An IPv4 range is not masqueraded by the
// bridge plugin, which would also rewrite the source of traffic to other
// nodes' pods and run iptables several times per pod: the agent keeps
// node-wide rules for it instead (network.Egress). An IPv6 range, which
// the agent's rules do not cover, keeps the plugin's masquerading.
type CNIConfig struct {
	// PodCIDR is the node's pod range (spec.podCIDR); required.
	PodCIDR string
	// Network names the CNI network (DefaultCNINetwork).
	Network string
	// Bridge is the bridge device (DefaultCNIBridge).
	Bridge string
	// IPAMDataDir is where host-local keeps its leases; the plugin's own
	// default (/var/lib/cni/networks) when empty.
	IPAMDataDir string
	// MTU of the bridge and veths; the plugin's default when zero.
	MTU int
}

// WriteCNIConfig writes the pod network's configuration for podCIDR to
// dir/10-cairn.conflist with the defaults of CNIConfig.
func WriteCNIConfig(dir, podCIDR string) error {
	return CNIConfig{PodCIDR: podCIDR}.Write(dir)
}

// Write writes the configuration to dir/10-cairn.conflist, replacing it
// in one rename: containerd reloads the directory when it changes and
// must never read half a file.
func (c CNIConfig) Write(dir string) error {
	b, err := c.Marshal()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cri: CNI config dir: %w", err)
	}
	path := filepath.Join(dir, CNIConfFile)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil // unchanged: do not make containerd reload
	}
	tmp, err := os.CreateTemp(dir, "."+CNIConfFile+".*")
	if err != nil {
		return fmt.Errorf("cri: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("cri: writing %s: %w", path, err)
	}
	if err := tmp.Chmod(cniConfPermissions); err != nil {
		tmp.Close()
		return fmt.Errorf("cri: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cri: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cri: %w", err)
	}
	return nil
}

// Marshal returns the conflist.
func (c CNIConfig) Marshal() ([]byte, error) {
	prefix, err := netip.ParsePrefix(c.PodCIDR)
	if err != nil {
		return nil, fmt.Errorf("cri: podCIDR %q: %w", c.PodCIDR, err)
	}
	if prefix != prefix.Masked() {
		return nil, fmt.Errorf("cri: podCIDR %q has host bits set; did you mean %s?", c.PodCIDR, prefix.Masked())
	}
	if c.Network == "" {
		c.Network = DefaultCNINetwork
	}
	if c.Bridge == "" {
		c.Bridge = DefaultCNIBridge
	}
	route, masq := defaultIPv4Route, false
	if prefix.Addr().Is6() {
		route, masq = defaultIPv6Route, true
	}
	list := cniConfList{
		CNIVersion: cniSpecVersion,
		Name:       c.Network,
		Plugins: []any{
			bridgePlugin{
				Type: "bridge", Bridge: c.Bridge, IsGateway: true, IPMasq: masq, HairpinMode: true, MTU: c.MTU,
				IPAM: hostLocalIPAM{
					Type:    "host-local",
					Ranges:  [][]ipamRange{{{Subnet: prefix.String()}}},
					Routes:  []ipamRoute{{Dst: route}},
					DataDir: c.IPAMDataDir,
				},
			},
			portmapPlugin{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}
	return append(b, '\n'), nil
}

// The conflist's JSON shapes, as the CNI spec and the plugins define them.
type (
	cniConfList struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []any  `json:"plugins"`
	}
	bridgePlugin struct {
		Type        string        `json:"type"`
		Bridge      string        `json:"bridge"`
		IsGateway   bool          `json:"isGateway"`
		IPMasq      bool          `json:"ipMasq"`
		HairpinMode bool          `json:"hairpinMode"`
		MTU         int           `json:"mtu,omitempty"`
		IPAM        hostLocalIPAM `json:"ipam"`
	}
	hostLocalIPAM struct {
		Type    string        `json:"type"`
		Ranges  [][]ipamRange `json:"ranges"`
		Routes  []ipamRoute   `json:"routes"`
		DataDir string        `json:"dataDir,omitempty"`
	}
	ipamRange struct {
		Subnet string `json:"subnet"`
	}
	ipamRoute struct {
		Dst string `json:"dst"`
	}
	portmapPlugin struct {
		Type         string          `json:"type"`
		Capabilities map[string]bool `json:"capabilities"`
	}
)
