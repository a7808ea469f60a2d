package devcluster

import (
	"strings"
	"testing"
)

func TestParseMountInfo(t *testing.T) {
	info := `36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory
37 25 0:32 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate
90 80 0:50 / /home/u/my\040dir/bpf rw,relatime - bpf bpf rw,mode=700
91 80 0:4 net:[4026532] /run/netns/cairn-dev-n1 rw shared:5 - nsfs nsfs rw
92 80 0:33 /sub /sys/fs/cgroup/inner rw - cgroup2 cgroup2 rw
malformed line
`
	mounts, err := parseMountInfo(strings.NewReader(info))
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 5 {
		t.Fatalf("%d mounts: %+v", len(mounts), mounts)
	}
	tests := []struct {
		i             int
		point, fstype string
	}{
		{0, "/sys/fs/cgroup/memory", "cgroup"},
		{2, "/home/u/my dir/bpf", "bpf"},
		{3, "/run/netns/cairn-dev-n1", "nsfs"},
	}
	for _, tt := range tests {
		if m := mounts[tt.i]; m.Point != tt.point || m.FSType != tt.fstype {
			t.Errorf("mount %d = %+v, want %s %s", tt.i, m, tt.point, tt.fstype)
		}
	}
	if got := cgroupMounts(mounts); strings.Join(got, ",") != "/sys/fs/cgroup/memory,/sys/fs/cgroup/unified" {
		t.Errorf("cgroup mounts %v (a hierarchy mounted from a sub-cgroup is not the host's)", got)
	}
	if got := cgroup2Mount(mounts); got != "/sys/fs/cgroup/unified" {
		t.Errorf("cgroup2 mount %q", got)
	}
}

func TestBelowExcludesTheDirectoryItself(t *testing.T) {
	tests := []struct {
		p, dir string
		want   bool
	}{
		{"/state/bpf", "/state", true},
		{"/state/n1/kubelet/pods/x/volumes/y", "/state/", true},
		{"/state", "/state", false},
		{"/state2/bpf", "/state", false},
	}
	for _, tt := range tests {
		if got := below(tt.p, tt.dir); got != tt.want {
			t.Errorf("below(%q, %q) = %v, want %v", tt.p, tt.dir, got, tt.want)
		}
	}
}
