package helper

import (
	"encoding/binary"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"

	"cairn/node/runtime/embedded/cgroups"
)

func TestOnlyPathsInProcAreLeftToTheChild(t *testing.T) {
	got := procPaths([]string{"/proc/kcore", "/sys/firmware", "proc/keys", "/proc", "/procfs", "/proc/../etc/x"})
	want := []string{"/proc/kcore", "/proc/keys", "/proc"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("procPaths = %q, want %q", got, want)
	}
}

func TestIgnoredSignalsAreReadFromTheKernel(t *testing.T) {
	signal.Ignore(syscall.SIGUSR2)
	defer signal.Reset(syscall.SIGUSR2)
	sigs, err := ignoredSignals()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sigs, syscall.SIGUSR2) || slices.Contains(sigs, syscall.SIGKILL) {
		t.Errorf("ignoredSignals = %v, want SIGUSR2 and not SIGKILL", sigs)
	}
}

func TestChildFailuresNameTheirStepAndPath(t *testing.T) {
	saved := resetSignals
	resetSignals = shimIgnoredSignals[:]
	defer func() { resetSignals = saved }()
	sp := &Spec{
		Args:          []string{"/app/server"},
		MaskedPaths:   []string{"/sys/firmware", "/proc/kcore", "/proc/keys"},
		ReadonlyPaths: []string{"/proc/sys"},
		UID:           1000,
		Cgroups:       cgroups.Paths{V1: map[string]string{"memory": "/cg/memory/c1", "pids": "/cg/pids/c1"}},
	}
	record := func(step uint8, index uint16, errno syscall.Errno) childFailure {
		var f childFailure
		f[0] = step
		binary.LittleEndian.PutUint16(f[1:3], index)
		binary.LittleEndian.PutUint32(f[4:], uint32(errno))
		return f
	}
	for _, tc := range []struct {
		f    childFailure
		want string
	}{
		// The index counts the paths in /proc only: the shim handles the others.
		{record(stepMask, 1, syscall.EPERM), "masking /proc/keys: operation not permitted"},
		{record(stepReadonly, 0, syscall.EBUSY), "making /proc/sys read-only: device or resource busy"},
		{record(stepMask, 7, syscall.EPERM), "masking ?: operation not permitted"},
		{record(stepProc, 0, syscall.EPERM), "mounting /proc: operation not permitted"},
		{record(stepSignals, 2, syscall.EINVAL), "setting terminated back to its default action: invalid argument"},
		{record(stepCgroup, 1, syscall.ENOSPC), "placing the container's process in its cgroup (/cg/pids/c1/cgroup.procs): no space left on device"},
		{record(stepCgroup, 5, syscall.ENOSPC), "placing the container's process in its cgroups: no space left on device"},
		{record(stepUID, 0, syscall.EINVAL), "setresuid 1000: invalid argument"},
		{record(stepExec, 0, syscall.ENOEXEC), "exec /app/server: exec format error"},
		{record(99, 0, syscall.EIO), "failed to start (step 99): input/output error"},
	} {
		err := tc.f.describe(sp)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("describe = %v, want %q", err, tc.want)
		}
	}
	if err := record(stepExec, 0, syscall.ENOENT).describe(sp); err == nil || err.(interface{ Unwrap() error }).Unwrap() != syscall.ENOENT {
		t.Errorf("describe = %v, want it to wrap the errno", err)
	}
}
