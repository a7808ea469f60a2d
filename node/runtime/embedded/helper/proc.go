package helper

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
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
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return waitStatusCode(ws)
	}
	return ps.ExitCode()
}

// waitStatusCode is ExitCode for a status from wait4.
func waitStatusCode(ws syscall.WaitStatus) int {
	switch {
	case ws.Signaled():
		return 128 + int(ws.Signal())
	case ws.Exited():
		return ws.ExitStatus()
	}
	return 255
}

// child is the shim's own child process, the container's first. The
// shim waits for it with wait4 rather than through os.Process, whose
// first use probes for pidfd support by forking a process: a fork and a
// cleanup registration saved on every container start.
type child int

// kill sends the child SIGKILL.
func (c child) kill() { syscall.Kill(int(c), syscall.SIGKILL) }

// wait reaps the child and returns its exit status as ExitCode does.
func (c child) wait() int {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(int(c), &ws, 0, nil)
		switch err {
		case nil:
			return waitStatusCode(ws)
		case syscall.EINTR:
			continue
		}
		return 255
	}
}

// ignoredSignals returns the signals the calling process ignores, as
// the kernel has them: an rt_sigaction query per signal costs far less
// than /proc/self/status, whose text the kernel builds from every part
// of the process.
func ignoredSignals() ([]syscall.Signal, error) {
	var sigs []syscall.Signal
	for sig := syscall.Signal(1); sig <= 64; sig++ {
		// The kernel's struct sigaction starts with the handler on
		// every architecture; 32 bytes hold the whole of it.
		var old [4]uint64
		_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old[0])), 8, 0, 0)
		if errno != 0 {
			return nil, fmt.Errorf("helper: reading the action of %v: %w", sig, errno)
		}
		if old[0] == sigIgn {
			sigs = append(sigs, sig)
		}
	}
	return sigs, nil
}

// sigIgn is SIG_IGN, the handler of an ignored signal.
const sigIgn = 1
