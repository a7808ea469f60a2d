package kubelet

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostInfo is what the node reports of its machine.
type hostInfo struct {
	CPUs                  int
	MemoryTotal           int64
	MachineID, BootID     string
	SystemUUID            string
	KernelVersion         string
	OSImage               string
	OperatingSystem, Arch string
}

func readHostInfo() hostInfo {
	h := hostInfo{CPUs: runtime.NumCPU(), OperatingSystem: runtime.GOOS, Arch: runtime.GOARCH}
	if m, err := readMeminfo(); err == nil {
		h.MemoryTotal = m["MemTotal"]
	}
	h.MachineID = readTrimmed("/etc/machine-id")
	h.BootID = readTrimmed("/proc/sys/kernel/random/boot_id")
	h.SystemUUID = readTrimmed("/sys/class/dmi/id/product_uuid")
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.KernelVersion = unix.ByteSliceToString(u.Release[:])
	}
	h.OSImage = osImage()
	return h
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is PRETTY_NAME of /etc/os-release, as kubelets report it.
func osImage() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return "Linux"
}

// readMeminfo returns /proc/meminfo's values in bytes.
func readMeminfo() (map[string]int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		out[name] = n
	}
	return out, sc.Err()
}

// diskUsage is the size and free space of the filesystem of path.
func diskUsage(path string) (total, free int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("kubelet: statfs %s: %w", path, err)
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}

// pidUsage is the number of processes and the kernel's pid limit.
func pidUsage() (procs, limit int64, err error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, 0, err
	}
	limit, err = strconv.ParseInt(readTrimmed("/proc/sys/kernel/pid_max"), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("kubelet: reading pid_max: %w", err)
	}
	return int64(si.Procs), limit, nil
}
