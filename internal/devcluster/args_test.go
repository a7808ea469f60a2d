package devcluster

import (
	"strings"
	"testing"
)

// flagValue returns the value following flag in args.
func flagValue(args []string, flag string) (string, bool) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1], true
		}
	}
	return "", false
}

func TestAgentArgsKeepEachNodeToItself(t *testing.T) {
	l := Layout{Dir: "/state"}
	topo := NewTopology(0, true)
	n1, n2 := topo.Nodes[0], topo.Nodes[1]
	tests := []struct {
		name string
		opts NodeOptions
		want map[string]string
		none []string
	}{
		{"with the eBPF proxy", NodeOptions{CPU: "1", Memory: "2048Mi", Cgroup2: "/sys/fs/cgroup/unified", Proxy: "ebpf"},
			map[string]string{
				"--server":       "https://172.31.250.1:6443,https://172.31.250.2:6443,https://172.31.250.3:6443",
				"--node-name":    "cairn-dev-n1",
				"--node-ip":      "172.31.250.11",
				"--netns":        "/run/netns/cairn-dev-n1",
				"--data-dir":     "/state/n1",
				"--cgroup-root":  "/cairn-dev/n1",
				"--bpf-cgroup":   "/sys/fs/cgroup/unified/cairn-dev/n1",
				"--bpf-pin-path": "/state/bpf/n1",
				"--gossip-join":  n2.GossipAddr(),
				"--cpu":          "1",
				"--memory":       "2048Mi",
				"--proxy":        "ebpf",
				// A laptop's nearly full disk must not keep the pods Pending.
				"--eviction-disk-free": "0.01",
			}, nil},
		{"without it", NodeOptions{Proxy: "none"},
			map[string]string{"--proxy": "none"},
			[]string{"--bpf-cgroup", "--bpf-pin-path", "--cpu", "--memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := AgentArgs(l, topo, n1, tt.opts, "debug")
			if args[0] != "agent" {
				t.Fatalf("args %v", args)
			}
			for flag, want := range tt.want {
				if got, _ := flagValue(args, flag); got != want {
					t.Errorf("%s = %q, want %q", flag, got, want)
				}
			}
			for _, flag := range tt.none {
				if _, ok := flagValue(args, flag); ok {
					t.Errorf("unexpected %s in %v", flag, args)
				}
			}
		})
	}
}

func TestServerArgsUseTheirOwnDataAndAddresses(t *testing.T) {
	l := Layout{Dir: "/state"}
	topo := NewTopology(0, true)
	for _, s := range topo.Servers {
		args := ServerArgs(l, topo, s, "info")
		for flag, want := range map[string]string{
			"--name": s.Name, "--data-dir": "/state/" + s.Name, "--pki-dir": "/state/pki",
			"--api-listen": s.APIAddr, "--store-listen": s.StoreAddr, "--peer-listen": s.PeerAddr,
			"--initial-cluster": topo.InitialCluster(),
		} {
			if got, _ := flagValue(args, flag); got != want {
				t.Errorf("%s: %s = %q, want %q", s.Name, flag, got, want)
			}
		}
		if v, ok := flagValue(args, "--disable"); ok {
			t.Errorf("%s disables %s: the leader must run the scheduler and controllers", s.Name, v)
		}
	}
}

func TestChildEnvDropsCairnVariables(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "CAIRN_DIR=/x", "HOME=/root", "CAIRN_WRITE_KUBECONFIG=/y"})
	if strings.Join(got, " ") != "PATH=/bin HOME=/root" {
		t.Errorf("env %v", got)
	}
}
