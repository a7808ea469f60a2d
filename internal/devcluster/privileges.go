package devcluster

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Linux capabilities the agents need, as in linux/capability.h.
const (
	capNetAdmin = 12
	capSysAdmin = 21
)

// nodesUnavailable says why this process cannot run agents, or "" when
// it can: they need network namespaces, a bridge, cgroups and mounts.
func nodesUnavailable() string {
	eff, err := effectiveCaps()
	if err != nil {
		return fmt.Sprintf("cannot read this process's capabilities: %v", err)
	}
	var missing []string
	for _, c := range []struct {
		bit  uint
		name string
	}{{capSysAdmin, "CAP_SYS_ADMIN"}, {capNetAdmin, "CAP_NET_ADMIN"}} {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Sprintf("not running as root (uid %d)", uid)
	}
	return "missing " + strings.Join(missing, " and ")
}

func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapEff line in /proc/self/status")
}
