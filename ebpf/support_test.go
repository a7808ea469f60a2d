package ebpf

import (
	"path/filepath"
	"strings"
	"testing"

	"cairn/internal/privtest"
)

func TestCheckSupportSaysWhatIsMissing(t *testing.T) {
	privtest.Require(t, privtest.CapBPF, privtest.CapNetAdmin, privtest.CapSysAdmin)
	cg := privtest.NewCgroup(t)
	bpffs := privtest.BPFFS(t)
	notBPFFS := t.TempDir()
	tests := []struct {
		name string
		cfg  ProxyConfig
		want string // in the error; empty for success
	}{
		{"supported", ProxyConfig{NodeName: "n", CgroupPath: cg.Path, PinPath: filepath.Join(bpffs, "n")}, ""},
		{"no node name", ProxyConfig{CgroupPath: cg.Path, PinPath: bpffs}, "NodeName is required"},
		{"pin path off bpffs", ProxyConfig{NodeName: "n", CgroupPath: cg.Path, PinPath: filepath.Join(notBPFFS, "n")}, "mount -t bpf bpf /sys/fs/bpf"},
		{"cgroup path not a cgroup", ProxyConfig{NodeName: "n", CgroupPath: notBPFFS, PinPath: bpffs}, "is not a cgroup v2 directory"},
		{"cgroup path missing", ProxyConfig{NodeName: "n", CgroupPath: filepath.Join(cg.Path, "absent"), PinPath: bpffs}, "create it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSupport(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckSupport = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("CheckSupport = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}
