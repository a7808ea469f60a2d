package main

import (
	"testing"

	"cairn/internal/devcluster"

	"github.com/spf13/cobra"
)

// TestDevChildrenArgsAreFlagsOfTheirCommands keeps `cairn dev` in step
// with the flags of `cairn server` and `cairn agent`.
func TestDevChildrenArgsAreFlagsOfTheirCommands(t *testing.T) {
	l := devcluster.Layout{Dir: "/state"}
	topo := devcluster.NewTopology(0, true)
	opts := devcluster.NodeOptions{CPU: "1", Memory: "1Gi", Cgroup2: "/sys/fs/cgroup/unified", Proxy: "ebpf"}
	tests := []struct {
		name string
		cmd  *cobra.Command
		args []string
	}{
		{"server", newServerCmd(), devcluster.ServerArgs(l, topo, topo.Servers[0], "info")},
		{"agent", newAgentCmd(), devcluster.AgentArgs(l, topo, topo.Nodes[0], opts, "info")},
		{"agent without the proxy", newAgentCmd(), devcluster.AgentArgs(l, topo, topo.Nodes[1], devcluster.NodeOptions{Proxy: "none"}, "info")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.args[0] != tt.cmd.Name() {
				t.Fatalf("args start with %q, not %q", tt.args[0], tt.cmd.Name())
			}
			// The root's persistent flags (--log-level) come with the root.
			root := newRootCmd()
			root.AddCommand(tt.cmd)
			if err := tt.cmd.ParseFlags(tt.args[1:]); err != nil {
				t.Fatalf("%s %v: %v", tt.name, tt.args[1:], err)
			}
			if rest := tt.cmd.Flags().Args(); len(rest) > 0 {
				t.Errorf("arguments left over: %v", rest)
			}
		})
	}
}

func TestDemoCommandIsHidden(t *testing.T) {
	cmd, _, err := newRootCmd().Find([]string{"__demo-http", "serve"})
	if err != nil || cmd.Name() != "serve" || !cmd.Parent().Hidden {
		t.Errorf("found %v, %v", cmd, err)
	}
}
