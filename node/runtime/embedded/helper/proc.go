package helper

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcStartTime returns a process's start time in clock ticks since boot
// (field 22 of /proc/PID/stat). With the pid it names a process for good:
// a pid reused by a later process has another start time.
func ProcStartTime(pid int) (uint64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("helper: malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(raw[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("helper: malformed /proc/%d/stat", pid)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, fmt.Errorf("helper: process %d is a zombie", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Alive reports whether the process pid started at start still runs.
func Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	got, err := ProcStartTime(pid)
	return err == nil && got == start
}

// ExitCode is a process's exit status as shells report it: the code it
// exited with, or 128 plus the signal that killed it.
func ExitCode(ps *os.ProcessState) int {
	if ps == nil {
		return 255
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return ps.ExitCode()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	case ws.Exited():
		return ws.ExitStatus()
	}
	return 255
}
