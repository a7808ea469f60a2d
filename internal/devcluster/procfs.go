package devcluster

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procStat returns the state letter and start time (clock ticks after
// boot) of a process, from /proc/PID/stat.
func procStat(pid int) (state string, start uint64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	return parseStat(string(raw))
}

// parseStat reads the state and start time from a /proc/PID/stat line.
// The command name, in parentheses, may hold spaces and parentheses, so
// fields are counted after its last ')'.
func parseStat(line string) (string, uint64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("devcluster: malformed stat line %q", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state); start time is field 22.
	if len(f) < 20 {
		return "", 0, fmt.Errorf("devcluster: short stat line %q", line)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("devcluster: stat start time: %w", err)
	}
	return f[0], start, nil
}

// startTimeOf returns a process's start time, 0 if it is gone.
func startTimeOf(pid int) uint64 {
	_, start, err := procStat(pid)
	if err != nil {
		return 0
	}
	return start
}

// sameProcess reports whether pid runs and started at start: a zombie
// or a reused pid is not the same process.
func sameProcess(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	state, s, err := procStat(pid)
	return err == nil && state != "Z" && s == start
}

// cmdline returns a process's arguments.
func cmdline(pid int) []string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(raw) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
}

// pids lists the processes of the machine.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// clusterProcessArgs are the first arguments of the processes a cluster
// runs: servers, agents and the embedded runtime's helpers.
func clusterProcessArgs() []string {
	return []string{"server", "agent", "__container-shim", "__container-exec"}
}

// isClusterProcess reports whether args are those of a server, agent or
// runtime helper working in the state directory dir. Other processes
// naming the directory (an editor, `tail -f` of a log, `cairn dev`
// itself) are not.
func isClusterProcess(args []string, dir string) bool {
	if len(args) < 2 {
		return false
	}
	known := false
	for _, k := range clusterProcessArgs() {
		known = known || args[1] == k
	}
	if !known {
		return false
	}
	prefix := strings.TrimRight(dir, "/") + "/"
	for _, a := range args[2:] {
		if strings.HasPrefix(a, prefix) || strings.Contains(a, "="+prefix) {
			return true
		}
	}
	return false
}
