package helper

import (
	"encoding/binary"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The container's first process is forked from the shim and execs the
// container's command directly: a Go process in between (a container
// init) would cost each start the Go runtime's start-up, a few
// milliseconds of CPU, which many simultaneous starts feel. The fork is
// a vfork (CLONE_VM|CLONE_VFORK), as in Go's own os/exec: the child
// borrows the shim's memory while the forking thread sleeps until the
// exec, so nothing of the shim is copied, neither its page tables at the
// fork nor its pages when the shim writes them after it. The child runs
// on the stack of a thread of a Go program whose runtime it must not
// touch: it makes raw system calls only, on values the shim prepared,
// and allocates nothing. Everything that can happen before the fork
// happens on the shim's thread instead (see launch.go); the child does
// what only it can: it moves itself into the container's cgroups, mounts
// the /proc of its new PID namespace, and drops the privileges that the
// shim keeps.

//go:linkname beforeFork syscall.runtime_BeforeFork
func beforeFork()

//go:linkname afterFork syscall.runtime_AfterFork
func afterFork()

//go:linkname afterForkInChild syscall.runtime_AfterForkInChild
func afterForkInChild()

// rawVfork is clone(flags) for a child that shares the caller's stack
// (vfork_linux_*.s). Like the one of Go's os/exec, it keeps its return
// address off the stack, which the child writes over before the parent
// resumes. It is in this package's assembly, as a call to another
// package's would go through an ABI wrapper whose own return address
// the child would clobber.
func rawVfork(flags uintptr) (pid uintptr, errno syscall.Errno)

// childPlan is everything the child does between the fork and the exec,
// as pointers and numbers made before the fork.
type childPlan struct {
	// cgroupFDs are the container's cgroup.procs files, open for
	// writing; failFD (close-on-exec) is where the child writes a
	// childFailure if it cannot exec.
	cgroupFDs []int
	failFD    int
	// oomScoreAdj is the child's oom_score_adj as text, nil to keep the
	// shim's.
	oomScoreAdj []byte
	// stdio become the child's fds 0, 1 and 2.
	stdio [3]int
	// tty makes stdin the controlling terminal of the child's session.
	tty bool
	// newPID forks the child into a new PID namespace; without it, into
	// the one the forking thread set for its children.
	newPID bool
	// masked and readonly are the masked and read-only paths inside
	// /proc, which exist only once the child has mounted it.
	masked, readonly []*byte
	groups           []uint32
	uid, gid         uint32
	path             *byte
	argv, envv       []*byte

	// Constant strings, as the child cannot make them.
	proc, procDir, tmpfs, sizeZero, devNull, empty, zero, oomFile *byte
	// sigDefault is a kernel struct sigaction for SIG_DFL: all zeros.
	sigDefault [4]uint64
}

// The steps of the child that can fail, as it reports them.
const (
	stepSignals uint8 = iota + 1
	stepCgroup
	stepStdio
	stepSession
	stepTerminal
	stepProc
	stepMask
	stepReadonly
	stepGroups
	stepGID
	stepUID
	stepExec
)

// rawATFDCWD is unix.AT_FDCWD (-100) as a raw system call argument.
const rawATFDCWD = ^uintptr(-unix.AT_FDCWD - 1)

// childFailure is the record a child writes on its failure pipe: the
// step, the index of the path for the per-path steps, and the errno.
type childFailure [8]byte

// newChildPlan prepares sp's child. cgroupFDs are open on the files of
// sp.Cgroups.ProcsFiles, in that order. The paths under /proc of sp's
// masked and read-only paths are the child's to handle; the caller
// handles the others.
func newChildPlan(sp *Spec, path string, stdio [3]int, cgroupFDs []int, failFD int) (*childPlan, error) {
	p := &childPlan{cgroupFDs: cgroupFDs, failFD: failFD, stdio: stdio, tty: sp.TTY, newPID: sp.PIDNamespaceOf == nil && !sp.HostPID,
		groups: sp.Groups, uid: sp.UID, gid: sp.GID}
	if len(cgroupFDs) > math.MaxUint16 {
		return nil, fmt.Errorf("too many cgroups")
	}
	if sp.OOMScoreAdj != 0 {
		p.oomScoreAdj = strconv.AppendInt(nil, sp.OOMScoreAdj, 10)
	}
	var err error
	str := func(s string) *byte {
		b, e := syscall.BytePtrFromString(s)
		if e != nil && err == nil {
			err = e
		}
		return b
	}
	strs := func(ss []string) []*byte {
		b, e := syscall.SlicePtrFromStrings(ss)
		if e != nil && err == nil {
			err = e
		}
		return b
	}
	for _, m := range procPaths(sp.MaskedPaths) {
		p.masked = append(p.masked, str(m))
	}
	for _, m := range procPaths(sp.ReadonlyPaths) {
		p.readonly = append(p.readonly, str(m))
	}
	if len(p.masked) > math.MaxUint16 || len(p.readonly) > math.MaxUint16 {
		return nil, fmt.Errorf("too many masked or read-only paths")
	}
	p.path, p.argv, p.envv = str(path), strs(sp.Args), strs(sp.Env)
	p.proc, p.procDir, p.tmpfs, p.sizeZero, p.devNull, p.empty = str("proc"), str("/proc"), str("tmpfs"), str("size=0"), str("/dev/null"), str("")
	p.zero, p.oomFile = str("0"), str("/proc/self/oom_score_adj")
	if err != nil {
		return nil, fmt.Errorf("the container's command or paths: %w", err)
	}
	return p, nil
}

// inProc reports whether the container path p is /proc or under it.
func inProc(p string) bool {
	p = path.Clean("/" + p)
	return p == "/proc" || strings.HasPrefix(p, "/proc/")
}

// procPaths returns the paths of ps that are inside /proc, cleaned.
func procPaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		if inProc(p) {
			out = append(out, path.Clean("/"+p))
		}
	}
	return out
}

// forkChild forks the container's first process from the calling
// thread, into a new PID namespace, and returns its pid once the child
// has exec'd the command or failed to; a failure is on p.failFD.
func forkChild(p *childPlan) (int, error) {
	syscall.ForkLock.Lock()
	pid, err := forkChild1(p)
	afterFork()
	syscall.ForkLock.Unlock()
	if err != 0 {
		return 0, fmt.Errorf("forking the container's process: %w", err)
	}
	return pid, nil
}

// forkChild1 is the fork, and the child until its exec. The parent
// returns at once, as the child has written over this frame; the caller
// calls afterFork. beforeFork comes after this function's own stack
// check, since no stack may grow after it.
//
// Between the fork and the exec the child may only call nosplit
// functions (the raw system calls) and must not allocate or write
// pointers: it runs on the stack of a Go thread, in memory whose runtime
// it must not disturb.
//
//go:norace
//go:nocheckptr
//go:noinline
func forkChild1(p *childPlan) (pid int, err syscall.Errno) {
	var (
		fail  childFailure
		step  uint8
		index int
		errno syscall.Errno
		stx   unix.Statx_t
		sfs   syscall.Statfs_t
	)
	flags := uintptr(syscall.SIGCHLD) | syscall.CLONE_VM | syscall.CLONE_VFORK
	if p.newPID {
		flags |= syscall.CLONE_NEWPID
	}
	beforeFork()
	r1, err1 := rawVfork(flags)
	if err1 != 0 || r1 != 0 {
		return int(r1), err1
	}

	// The child.
	afterForkInChild()
	// What the shim ignores, the command gets at its default.
	for index = 0; index < len(resetSignals); index++ {
		if _, _, errno = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(resetSignals[index]), uintptr(unsafe.Pointer(&p.sigDefault)), 0, 8, 0, 0); errno != 0 {
			step = stepSignals
			goto childFailed
		}
	}
	// Into the container's cgroups before anything else: the command
	// must never run outside their limits.
	for index = 0; index < len(p.cgroupFDs); index++ {
		if _, _, errno = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(p.cgroupFDs[index]), uintptr(unsafe.Pointer(p.zero)), 1); errno != 0 {
			step = stepCgroup
			goto childFailed
		}
	}
	index = 0
	for i := 0; i < 3; i++ {
		if p.stdio[i] == i {
			_, _, errno = syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(i), syscall.F_SETFD, 0)
		} else {
			_, _, errno = syscall.RawSyscall(syscall.SYS_DUP3, uintptr(p.stdio[i]), uintptr(i), 0)
		}
		if errno != 0 {
			step = stepStdio
			goto childFailed
		}
	}
	// With a tty the command leads its session with the terminal as its
	// controlling one: a shell runs interactively with job control, and
	// ^C signals its foreground job.
	if _, _, errno = syscall.RawSyscall(syscall.SYS_SETSID, 0, 0, 0); errno != 0 {
		step = stepSession
		goto childFailed
	}
	if p.tty {
		if _, _, errno = syscall.RawSyscall(syscall.SYS_IOCTL, 0, syscall.TIOCSCTTY, 0); errno != 0 {
			step = stepTerminal
			goto childFailed
		}
	}
	// A /proc of the new PID namespace: only a process inside it can
	// mount one.
	if _, _, errno = syscall.RawSyscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(p.proc)), uintptr(unsafe.Pointer(p.procDir)),
		uintptr(unsafe.Pointer(p.proc)), syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, 0, 0); errno != 0 {
		step = stepProc
		goto childFailed
	}
	if p.oomScoreAdj != nil {
		// Best effort: lowering it needs CAP_SYS_RESOURCE, which root
		// lacks in some VMs; the kubelet's values are advisory anyway.
		fd, _, e := syscall.RawSyscall6(syscall.SYS_OPENAT, rawATFDCWD, uintptr(unsafe.Pointer(p.oomFile)), syscall.O_WRONLY|syscall.O_CLOEXEC, 0, 0, 0)
		if e == 0 {
			syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p.oomScoreAdj[0])), uintptr(len(p.oomScoreAdj)))
			syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0)
		}
	}
	for index = 0; index < len(p.masked); index++ {
		target := p.masked[index]
		if _, _, e := syscall.RawSyscall6(unix.SYS_STATX, rawATFDCWD, uintptr(unsafe.Pointer(target)), 0, unix.STATX_TYPE, uintptr(unsafe.Pointer(&stx)), 0); e != 0 {
			continue // nothing to hide
		}
		if stx.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			_, _, errno = syscall.RawSyscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(p.tmpfs)), uintptr(unsafe.Pointer(target)),
				uintptr(unsafe.Pointer(p.tmpfs)), syscall.MS_RDONLY, uintptr(unsafe.Pointer(p.sizeZero)), 0)
		} else {
			_, _, errno = syscall.RawSyscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(p.devNull)), uintptr(unsafe.Pointer(target)),
				uintptr(unsafe.Pointer(p.empty)), syscall.MS_BIND, 0, 0)
		}
		if errno != 0 {
			step = stepMask
			goto childFailed
		}
	}
	for index = 0; index < len(p.readonly); index++ {
		target := p.readonly[index]
		if _, _, e := syscall.RawSyscall6(unix.SYS_STATX, rawATFDCWD, uintptr(unsafe.Pointer(target)), 0, unix.STATX_TYPE, uintptr(unsafe.Pointer(&stx)), 0); e != 0 {
			continue
		}
		if _, _, errno = syscall.RawSyscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(target)), uintptr(unsafe.Pointer(target)),
			uintptr(unsafe.Pointer(p.empty)), syscall.MS_BIND|syscall.MS_REC, 0, 0); errno == 0 {
			_, _, errno = syscall.RawSyscall(syscall.SYS_STATFS, uintptr(unsafe.Pointer(target)), uintptr(unsafe.Pointer(&sfs)), 0)
		}
		if errno == 0 {
			// A read-only remount of a bind mount must keep the flags
			// of its source, or the kernel refuses it.
			flags := syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY | uintptr(sfs.Flags)&(syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC|syscall.MS_NOATIME|syscall.MS_NODIRATIME|syscall.MS_RELATIME)
			_, _, errno = syscall.RawSyscall6(syscall.SYS_MOUNT, uintptr(unsafe.Pointer(p.empty)), uintptr(unsafe.Pointer(target)),
				uintptr(unsafe.Pointer(p.empty)), flags, 0, 0)
		}
		if errno != 0 {
			step = stepReadonly
			goto childFailed
		}
	}
	index = 0
	// Nothing of the shim's but stdio reaches the command, whatever it
	// opened without close-on-exec (kernels before 5.11 lack the call).
	syscall.RawSyscall(unix.SYS_CLOSE_RANGE, 3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	// Credentials last: after them the child may no longer mount.
	if len(p.groups) > 0 {
		_, _, errno = syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(p.groups)), uintptr(unsafe.Pointer(&p.groups[0])), 0)
	} else {
		_, _, errno = syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0)
	}
	if errno != 0 {
		step = stepGroups
		goto childFailed
	}
	if _, _, errno = syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(p.gid), uintptr(p.gid), uintptr(p.gid)); errno != 0 {
		step = stepGID
		goto childFailed
	}
	if _, _, errno = syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(p.uid), uintptr(p.uid), uintptr(p.uid)); errno != 0 {
		step = stepUID
		goto childFailed
	}
	_, _, errno = syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(p.path)), uintptr(unsafe.Pointer(&p.argv[0])), uintptr(unsafe.Pointer(&p.envv[0])))
	step = stepExec

childFailed:
	fail[0] = step
	fail[1], fail[2] = byte(index), byte(index>>8)
	fail[4], fail[5], fail[6], fail[7] = byte(errno), byte(errno>>8), byte(errno>>16), byte(errno>>24)
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(p.failFD), uintptr(unsafe.Pointer(&fail[0])), uintptr(len(fail)))
	for {
		syscall.RawSyscall(syscall.SYS_EXIT, 1, 0, 0)
	}
}

// describe turns a child's failure record into the error it stands for.
func (f childFailure) describe(sp *Spec) error {
	errno := syscall.Errno(binary.LittleEndian.Uint32(f[4:]))
	index := int(binary.LittleEndian.Uint16(f[1:3]))
	at := func(ps []string) string {
		if in := procPaths(ps); index < len(in) {
			return in[index]
		}
		return "?"
	}
	switch f[0] {
	case stepSignals:
		if index < len(resetSignals) {
			return fmt.Errorf("setting %v back to its default action: %w", resetSignals[index], errno)
		}
		return fmt.Errorf("setting the signals back to their defaults: %w", errno)
	case stepCgroup:
		if files := sp.Cgroups.ProcsFiles(); index < len(files) {
			return fmt.Errorf("placing the container's process in its cgroup (%s): %w", files[index], errno)
		}
		return fmt.Errorf("placing the container's process in its cgroups: %w", errno)
	case stepStdio:
		return fmt.Errorf("setting up the container's stdin, stdout and stderr: %w", errno)
	case stepSession:
		return fmt.Errorf("starting the container's session: %w", errno)
	case stepTerminal:
		return fmt.Errorf("making the terminal the controlling one: %w", errno)
	case stepProc:
		return fmt.Errorf("mounting /proc: %w", errno)
	case stepMask:
		return fmt.Errorf("masking %s: %w", at(sp.MaskedPaths), errno)
	case stepReadonly:
		return fmt.Errorf("making %s read-only: %w", at(sp.ReadonlyPaths), errno)
	case stepGroups:
		return fmt.Errorf("setgroups %v: %w", sp.Groups, errno)
	case stepGID:
		return fmt.Errorf("setresgid %d: %w", sp.GID, errno)
	case stepUID:
		return fmt.Errorf("setresuid %d: %w", sp.UID, errno)
	case stepExec:
		return fmt.Errorf("exec %s: %w", sp.Args[0], errno)
	}
	return fmt.Errorf("the container's process failed to start (step %d): %w", f[0], errno)
}
