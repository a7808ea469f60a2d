package localcluster

import (
	"slices"
	"testing"
)

func TestMemberArgsEndWithTheExtraArgs(t *testing.T) {
	all := []ports{{client: 1, peer: 2, metrics: 3}, {client: 4, peer: 5, metrics: 6}}
	tests := []struct {
		name  string
		cfg   Config
		first string
		extra []string
	}{
		{"cairn with a log store", Config{Flavor: Cairn, Dir: "d", ExtraArgs: []string{"--raft-log-store", "wal"}}, "server", []string{"--raft-log-store", "wal"}},
		{"etcd without extras", Config{Flavor: Etcd, Dir: "d"}, "--name", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := tt.cfg.memberArgs(1, all)
			if err != nil {
				t.Fatal(err)
			}
			if args[0] != tt.first {
				t.Errorf("args start with %q, want %q: %v", args[0], tt.first, args)
			}
			if got := args[len(args)-len(tt.extra):]; !slices.Equal(got, tt.extra) {
				t.Errorf("args end with %v, want %v", got, tt.extra)
			}
			base, _ := tt.cfg.Flavor.args(tt.cfg.Dir, 1, all)
			if len(args) != len(base)+len(tt.extra) {
				t.Errorf("got %d args, want the flavor's %d plus %d extra", len(args), len(base), len(tt.extra))
			}
		})
	}
}

func TestMemberArgsRejectAnUnknownFlavor(t *testing.T) {
	cfg := Config{Flavor: "consul", ExtraArgs: []string{"-x"}}
	if _, err := cfg.memberArgs(0, []ports{{}}); err == nil {
		t.Error("memberArgs accepted flavor consul")
	}
}
