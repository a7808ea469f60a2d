package devcluster

import (
	"slices"
	"strings"
	"testing"
)

func TestTopologyPutsTheAPIOnTheBridgeOnlyWithNodes(t *testing.T) {
	tests := []struct {
		name      string
		offset    int
		withNodes bool
		wantAPI   []string
		wantStore []string
		wantNodes []string
	}{
		{"servers only", 0, false,
			[]string{"https://127.0.0.1:6443", "https://127.0.0.1:16443", "https://127.0.0.1:26443"},
			[]string{"https://127.0.0.1:2379", "https://127.0.0.1:12379", "https://127.0.0.1:22379"}, nil},
		{"with nodes", 0, true,
			[]string{"https://172.31.250.1:6443", "https://172.31.250.2:6443", "https://172.31.250.3:6443"},
			[]string{"https://127.0.0.1:2379", "https://127.0.0.1:12379", "https://127.0.0.1:22379"},
			[]string{"cairn-dev-n1@172.31.250.11", "cairn-dev-n2@172.31.250.12"}},
		{"offset shifts loopback ports only", 1000, true,
			[]string{"https://172.31.250.1:6443", "https://172.31.250.2:6443", "https://172.31.250.3:6443"},
			[]string{"https://127.0.0.1:3379", "https://127.0.0.1:13379", "https://127.0.0.1:23379"},
			[]string{"cairn-dev-n1@172.31.250.11", "cairn-dev-n2@172.31.250.12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := NewTopology(tt.offset, tt.withNodes)
			var stores, nodes []string
			for _, s := range topo.Servers {
				stores = append(stores, s.StoreURL())
			}
			for _, n := range topo.Nodes {
				nodes = append(nodes, n.Name+"@"+n.IP)
			}
			if !slices.Equal(topo.APIURLs(), tt.wantAPI) {
				t.Errorf("API URLs %v, want %v", topo.APIURLs(), tt.wantAPI)
			}
			if !slices.Equal(stores, tt.wantStore) {
				t.Errorf("store URLs %v, want %v", stores, tt.wantStore)
			}
			if !slices.Equal(nodes, tt.wantNodes) {
				t.Errorf("nodes %v, want %v", nodes, tt.wantNodes)
			}
		})
	}
}

func TestInitialClusterIsTheSameWithAndWithoutNodes(t *testing.T) {
	// The servers' data records their peers: a cluster first started
	// without root must restart with root, and the other way round.
	a, b := NewTopology(7, false).InitialCluster(), NewTopology(7, true).InitialCluster()
	if a != b {
		t.Fatalf("initial cluster differs: %q vs %q", a, b)
	}
	if want := "s1=127.0.0.1:2387,s2=127.0.0.1:12387,s3=127.0.0.1:22387"; a != want {
		t.Errorf("initial cluster %q, want %q", a, want)
	}
}

func TestNodesHaveTheirOwnNamespaceCgroupAndPorts(t *testing.T) {
	topo := NewTopology(0, true)
	seen := map[string]bool{}
	for _, n := range topo.Nodes {
		for _, v := range []string{n.NetNS(), n.Cgroup(), n.GossipAddr(), n.Short, n.IP} {
			if seen[v] {
				t.Errorf("%s shared between nodes", v)
			}
			seen[v] = true
		}
		if !strings.HasPrefix(n.NetNS(), NetNSDir+"/"+NamePrefix) || !strings.HasPrefix(n.Cgroup(), CgroupRoot+"/") {
			t.Errorf("node %s: netns %s, cgroup %s outside the swept names", n.Name, n.NetNS(), n.Cgroup())
		}
	}
	if topo.Nodes[0].KubeletPort == topo.Nodes[1].KubeletPort {
		t.Error("nodes share a kubelet port")
	}
}

func TestCheckPortOffset(t *testing.T) {
	tests := []struct {
		offset int
		ok     bool
	}{{0, true}, {-1355, true}, {-1356, false}, {39092, true}, {39093, false}}
	for _, tt := range tests {
		if err := checkPortOffset(tt.offset); (err == nil) != tt.ok {
			t.Errorf("offset %d: err %v, want ok=%v", tt.offset, err, tt.ok)
		}
	}
}
