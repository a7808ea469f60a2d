package privtest

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCapabilityNames(t *testing.T) {
	for c, want := range map[Capability]string{CapBPF: "CAP_BPF", CapNetAdmin: "CAP_NET_ADMIN", CapSysAdmin: "CAP_SYS_ADMIN", 7: "CAP_7"} {
		if got := c.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", c, got, want)
		}
	}
}

func TestNetnsHasOnlyLoopbackUp(t *testing.T) {
	ns := NewNetns(t)
	var ifs []net.Interface
	if err := ns.Do(func() (err error) { ifs, err = net.Interfaces(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(ifs) != 1 || ifs[0].Name != "lo" || ifs[0].Flags&net.FlagUp == 0 {
		t.Fatalf("interfaces in a new namespace = %+v, want lo, up", ifs)
	}
	if err := ns.AddAddr(netip.MustParsePrefix("10.244.9.9/32")); err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error {
		ln, err := net.Listen("tcp", "10.244.9.9:0")
		if err == nil {
			ln.Close()
		}
		return err
	}); err != nil {
		t.Errorf("listen on the added address: %v", err)
	}
}

func TestCgroupIsRemovedAtCleanup(t *testing.T) {
	var path string
	t.Run("use", func(t *testing.T) {
		Require(t, CapSysAdmin)
		path = NewCgroup(t).Path
		if _, err := os.Stat(filepath.Join(path, "cgroup.procs")); err != nil {
			t.Fatalf("not a cgroup: %v", err)
		}
	})
	if path == "" {
		return // skipped
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still exists after its test: %v", path, err)
	}
}

func TestBPFFSIsABPFFilesystem(t *testing.T) {
	dir := BPFFS(t)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		t.Errorf("%s has filesystem type %#x, want bpffs", dir, st.Type)
	}
}

func TestReapsWhatACrashedTestLeft(t *testing.T) {
	Require(t, CapSysAdmin)
	mnt := Cgroup2Mount(t)
	// A pid above pid_max can belong to no process.
	const dead = 99999999
	cg := filepath.Join(mnt, cgroupPrefix+"99999999-TestCrashed-00")
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", bpffsPrefix+"99999999-")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, ""); err != nil {
		t.Fatal(err)
	}
	if alive(dead) {
		t.Fatalf("pid %d exists", dead)
	}
	NewCgroup(t)
	BPFFS(t)
	if _, err := os.Stat(cg); !os.IsNotExist(err) {
		t.Errorf("stale cgroup %s not removed: %v", cg, err)
		os.Remove(cg)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("stale bpffs %s not removed: %v", dir, err)
		unmount(dir)
	}
}
