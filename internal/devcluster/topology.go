package devcluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// Names and addresses of what `cairn dev` creates on the host. They are
// fixed so that a sweep finds them without any state.
const (
	// BridgeName is the host bridge joining the nodes' namespaces.
	BridgeName = "cairn-dev0"
	// NamePrefix starts the name of each node, its network namespace and
	// its veth on the host.
	NamePrefix = "cairn-dev-"
	// CgroupRoot is the cgroup, in every hierarchy, under which each node
	// has its own (CgroupRoot/n1).
	CgroupRoot = "/cairn-dev"
	// Subnet is the bridge's network: servers' API addresses at .1-.3,
	// nodes at .11 and up.
	Subnet = "172.31.250.0/24"
	// NetNSDir is where named network namespaces live, as for `ip netns`.
	NetNSDir = "/run/netns"
	// PodNetNSRoot is where the embedded runtime bind mounts the pods'
	// network namespaces, one directory per node.
	PodNetNSRoot = "/run/cairn/netns"
	// ClusterCIDR is the pods' address range (the server's default).
	ClusterCIDR = "10.244.0.0/16"
	// ServerCount and NodeCount are the sizes of the cluster.
	ServerCount = 3
	NodeCount   = 2
)

// subnetBase is the first three octets of Subnet.
const subnetBase = "172.31.250."

// apiPort is the API port of every server when they listen on the bridge.
const apiPort = 6443

// Server is one control-plane replica.
type Server struct {
	// Name is the member name (s1, s2, s3).
	Name string
	// PeerAddr, StoreAddr and MetricsAddr are loopback host:ports. They
	// stay the same with and without root, since the servers' data
	// records their peers.
	PeerAddr, StoreAddr, MetricsAddr string
	// APIAddr is where the Kubernetes API listens: the server's own
	// address on the bridge as root, else a loopback port.
	APIAddr string
}

// APIURL is the server's Kubernetes API URL.
func (s Server) APIURL() string { return "https://" + s.APIAddr }

// StoreURL is the server's etcd v3 API URL.
func (s Server) StoreURL() string { return "https://" + s.StoreAddr }

// Node is one agent.
type Node struct {
	// Short names the node in commands and files (n1); Name is its Node
	// name, network namespace and host veth (cairn-dev-n1).
	Short, Name string
	// IP is its InternalIP on the bridge.
	IP string
	// KubeletPort is its kubelet API port.
	KubeletPort int
}

// NetNS is the path of the node's network namespace.
func (n Node) NetNS() string { return filepath.Join(NetNSDir, n.Name) }

// Cgroup is the node's cgroup root, relative to each hierarchy.
func (n Node) Cgroup() string { return CgroupRoot + "/" + n.Short }

// GossipAddr is where the node's gossip listens.
func (n Node) GossipAddr() string { return net.JoinHostPort(n.IP, "7946") }

// Topology is the cluster's processes and addresses.
type Topology struct {
	Servers []Server
	// Nodes is empty without root; with nodes, the API servers listen
	// on the bridge.
	Nodes []Node
}

// NewTopology lays the cluster out. portOffset shifts every loopback
// port, for a second cluster next to one on the default ports.
// withNodes adds the agents and puts the API servers on the bridge.
func NewTopology(portOffset int, withNodes bool) Topology {
	var t Topology
	for i := 0; i < ServerCount; i++ {
		base := 2379 + 10000*i + portOffset
		s := Server{
			Name:        "s" + strconv.Itoa(i+1),
			StoreAddr:   loopback(base),
			PeerAddr:    loopback(base + 1),
			MetricsAddr: loopback(base + 2),
			APIAddr:     loopback(6443 + 10000*i + portOffset),
		}
		if withNodes {
			s.APIAddr = net.JoinHostPort(ServerIP(i), strconv.Itoa(apiPort))
		}
		t.Servers = append(t.Servers, s)
	}
	if withNodes {
		for i := 0; i < NodeCount; i++ {
			short := "n" + strconv.Itoa(i+1)
			t.Nodes = append(t.Nodes, Node{
				Short: short, Name: NamePrefix + short,
				IP: subnetBase + strconv.Itoa(11+i), KubeletPort: 10250 + i,
			})
		}
	}
	return t
}

// ServerIP is the bridge address of server i (from 0), also the nodes'
// gateway for i = 0.
func ServerIP(i int) string { return subnetBase + strconv.Itoa(1+i) }

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// InitialCluster is the servers' --initial-cluster value.
func (t Topology) InitialCluster() string {
	var s string
	for i, srv := range t.Servers {
		if i > 0 {
			s += ","
		}
		s += srv.Name + "=" + srv.PeerAddr
	}
	return s
}

// APIURLs are the servers' API URLs, in order.
func (t Topology) APIURLs() []string {
	var out []string
	for _, s := range t.Servers {
		out = append(out, s.APIURL())
	}
	return out
}

// checkPortOffset refuses offsets that push a port out of the
// unprivileged range.
func checkPortOffset(off int) error {
	lo, hi := 1024-2379, 65535-(6443+10000*(ServerCount-1))
	if off < lo || off > hi {
		return fmt.Errorf("devcluster: port offset %d puts ports out of range (allowed: %d to %d)", off, lo, hi)
	}
	return nil
}

// server returns the server named name (s1).
func (t Topology) server(name string) (Server, bool) {
	for _, s := range t.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// node returns the node of short name short (n1).
func (t Topology) node(short string) (Node, bool) {
	for _, n := range t.Nodes {
		if n.Short == short {
			return n, true
		}
	}
	return Node{}, false
}
