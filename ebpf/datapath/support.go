package datapath

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Capability numbers from linux/capability.h.
const (
	capNetAdmin = 12
	capSysAdmin = 21
	capBPF      = 39
)

// CheckSupport reports the first thing missing for cfg to work: a
// capability, the cgroup v2 directory, the bpffs mount, or a kernel
// feature, in a sentence that says what to do about it. The programs use no
// CO-RE relocation, so kernel BTF (/sys/kernel/btf/vmlinux) is not needed.
func CheckSupport(cfg Config) error {
	if err := checkCaps(); err != nil {
		return err
	}
	if err := checkCgroup(cfg.CgroupPath); err != nil {
		return err
	}
	if err := checkBPFFS(existingAncestor(cfg.PinPath)); err != nil {
		return err
	}
	if err := features.HaveProgramType(ebpf.CGroupSockAddr); err != nil {
		return fmt.Errorf("datapath: the kernel cannot run cgroup socket address programs (%v): use Linux 5.7+ built with CONFIG_CGROUP_BPF=y", err)
	}
	if err := features.HaveProgramHelper(ebpf.CGroupSockAddr, asm.FnGetNetnsCookie); err != nil {
		return fmt.Errorf("datapath: the kernel lacks bpf_get_netns_cookie for socket address programs (%v): use Linux 5.7+", err)
	}
	return nil
}

func checkCaps() error {
	eff, err := effectiveCaps()
	if err != nil {
		return err
	}
	has := func(c uint) bool { return eff&(1<<c) != 0 }
	if !has(capNetAdmin) {
		return errors.New("datapath: missing CAP_NET_ADMIN: run the agent as root, or grant it CAP_NET_ADMIN and CAP_BPF (CAP_SYS_ADMIN before Linux 5.8)")
	}
	if !has(capBPF) && !has(capSysAdmin) {
		return errors.New("datapath: missing CAP_BPF: run the agent as root, or grant it CAP_BPF (CAP_SYS_ADMIN before Linux 5.8)")
	}
	if !has(capSysAdmin) && lastCap() < capBPF {
		return errors.New("datapath: this kernel predates CAP_BPF (Linux 5.8): grant the agent CAP_SYS_ADMIN")
	}
	return nil
}

// effectiveCaps reads the effective capability set of this process.
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("datapath: read capabilities: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("datapath: read capabilities: no CapEff in /proc/self/status")
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func checkCgroup(path string) error {
	mnt, err := Cgroup2Mount()
	if err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("datapath: cgroup %s: %w: create it, or pick a directory under %s", path, err, mnt)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("datapath: %s is not a cgroup v2 directory: pick one under the cgroup2 mount %s", path, mnt)
	}
	return nil
}

// checkBPFFS tells whether path is on a bpf filesystem, where objects can be
// pinned.
func checkBPFFS(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("datapath: pin path %s: %w", path, err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		return fmt.Errorf("datapath: %s is not on a bpffs mount, so maps and links cannot outlive the agent: mount one with `mount -t bpf bpf /sys/fs/bpf`, or choose a pin path under an existing bpffs mount", path)
	}
	return nil
}

// existingAncestor returns path or its closest existing parent: the pin
// directory itself is created on Open.
func existingAncestor(path string) string {
	for {
		if _, err := os.Stat(path); err == nil {
			return path
		}
		parent := filepath.Dir(path)
		if parent == path {
			return path
		}
		path = parent
	}
}

// Cgroup2Mount returns where the cgroup v2 hierarchy is mounted: the
// default cgroup to attach to. On hybrid hosts it is not /sys/fs/cgroup
// but e.g. /sys/fs/cgroup/unified.
func Cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("datapath: find cgroup2 mount: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields: id parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fields := strings.Fields(post); len(fields) > 0 && fields[0] == "cgroup2" {
			if pf := strings.Fields(pre); len(pf) >= 5 {
				return unescapeMount(pf[4]), nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("datapath: find cgroup2 mount: %w", err)
	}
	return "", errors.New("datapath: no cgroup2 filesystem is mounted: mount one with `mount -t cgroup2 none /sys/fs/cgroup/unified`, or boot with systemd.unified_cgroup_hierarchy=1")
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
