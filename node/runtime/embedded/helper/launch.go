package helper

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"cairn/internal/rootfs"

	"golang.org/x/sys/unix"
)

// launch starts sp's container process: on a thread of its own, it
// enters the sandbox's network namespace and new mount, UTS and IPC
// namespaces, builds the container's filesystem there and pivots into
// it, then forks the container's first process (see forkChild), which
// moves itself into the cgroups whose cgroup.procs files are open in
// cgroupProcs and execs the command. launch returns once it has, or has
// failed to; the child tells why on failW. stdio are the process's
// stdin, stdout and stderr; with a tty they are ignored and the
// terminal's master comes back. The thread is never given back to Go:
// with the container's namespaces and root it is good for nothing else,
// and Go ends a thread whose goroutine exits locked to it.
func launch(dir string, sp *Spec, stdio [3]*os.File, cgroupProcs []*os.File, failW *os.File) (pid int, master *os.File, err error) {
	type result struct {
		pid    int
		master *os.File
		err    error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var r result
		r.pid, r.master, r.err = launchOnThisThread(dir, sp, stdio, cgroupProcs, failW)
		done <- r
	}()
	r := <-done
	return r.pid, r.master, r.err
}

func launchOnThisThread(dir string, sp *Spec, stdio [3]*os.File, cgroupProcs []*os.File, failW *os.File) (int, *os.File, error) {
	if sp.NetNS != "" {
		if err := joinNamespace(sp.NetNS, unix.CLONE_NEWNET, "network"); err != nil {
			return 0, nil, err
		}
	}
	unshare := unix.CLONE_NEWNS | unix.CLONE_NEWUTS
	switch {
	case sp.IPCNS != "":
		if err := joinNamespace(sp.IPCNS, unix.CLONE_NEWIPC, "IPC"); err != nil {
			return 0, nil, err
		}
	case !sp.HostIPC:
		unshare |= unix.CLONE_NEWIPC
	}
	if sp.PIDNamespaceOf != nil {
		if err := joinPIDNamespace(*sp.PIDNamespaceOf); err != nil {
			return 0, nil, err
		}
	}
	// A new mount namespace implies this thread's own root, working
	// directory and umask: none of it is the rest of the shim's.
	if err := unix.Unshare(unshare); err != nil {
		return 0, nil, fmt.Errorf("making the container's namespaces: %w", err)
	}
	root := filepath.Join(dir, "rootfs")
	if err := setupRootfs(dir, root, sp); err != nil {
		return 0, nil, err
	}
	if err := unix.Sethostname([]byte(sp.Hostname)); err != nil {
		return 0, nil, fmt.Errorf("setting the hostname: %w", err)
	}
	// Capabilities are per thread in Linux, and what this one keeps in
	// its bounding set is all the command can ever get.
	if err := dropBoundingCaps(sp.Caps); err != nil {
		return 0, nil, err
	}
	if sp.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return 0, nil, fmt.Errorf("setting no_new_privs: %w", err)
		}
	}
	if err := pivotRoot(root); err != nil {
		return 0, nil, err
	}
	if sp.ReadonlyRootfs {
		if err := unix.Mount("", "/", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return 0, nil, fmt.Errorf("making the root filesystem read-only: %w", err)
		}
	}
	var master *os.File
	if sp.TTY {
		// The terminal of the container's own devpts, so that the name
		// of the command's tty exists in the container.
		m, slave, err := OpenPTYAt("/dev/ptmx")
		if err != nil {
			return 0, nil, fmt.Errorf("making the container's terminal: %w", err)
		}
		defer slave.Close()
		master = m
		stdio = [3]*os.File{slave, slave, slave}
	}
	fail := func(err error) (int, *os.File, error) {
		if master != nil {
			master.Close()
		}
		return 0, nil, err
	}
	if err := os.Chdir(sp.Cwd); err != nil {
		return fail(fmt.Errorf("changing to the working directory %s: %w", sp.Cwd, err))
	}
	unix.Umask(0o022)
	path, err := lookPathIn("/", sp.Args[0], sp.Env)
	if err != nil {
		return fail(err)
	}
	var fds [3]int
	for i, f := range stdio {
		fds[i] = int(f.Fd())
	}
	cgroupFDs := make([]int, len(cgroupProcs))
	for i, f := range cgroupProcs {
		cgroupFDs[i] = int(f.Fd())
	}
	plan, err := newChildPlan(sp, path, fds, cgroupFDs, int(failW.Fd()))
	if err != nil {
		return fail(err)
	}
	pid, err := forkChild(plan)
	// The files must stay open until the child has exec'd.
	runtime.KeepAlive(stdio)
	runtime.KeepAlive(cgroupProcs)
	runtime.KeepAlive(failW)
	if err != nil {
		return fail(err)
	}
	return pid, master, nil
}

// lookPathIn finds a command in the PATH of env, in the tree at root.
// With root "/", the caller has pivoted into the container's root, where
// the kernel resolves paths as exec will, symlinks included, and never
// out of it: one stat per PATH entry does.
func lookPathIn(root, name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathEnv := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		host := p
		if root != "/" {
			var err error
			if host, err = rootfs.ResolveIn(root, p); err != nil {
				continue
			}
		}
		if fi, err := os.Stat(host); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

// pivotRoot makes root the root of the mount namespace and detaches the
// old one, so that no host path stays reachable.
func pivotRoot(root string) error {
	if err := os.Chdir(root); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the old root on top of the new one,
	// where unmounting "." removes it.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into %s: %w", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	return os.Chdir("/")
}

// joinPIDNamespace makes the thread's next child start in the PID
// namespace of p, which must still be the process it names.
func joinPIDNamespace(p Process) error {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/pid", p.PID), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the target container is not running: %w", err)
	}
	defer unix.Close(fd)
	// Checked once the namespace is open: the file then holds the
	// namespace of the process named, not of one that took its PID.
	if start, err := ProcStartTime(p.PID); err != nil || start != p.Start {
		return fmt.Errorf("the target container is not running (process %d is gone)", p.PID)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWPID); err != nil {
		return fmt.Errorf("joining the target container's PID namespace: %w", err)
	}
	return nil
}

// joinNamespace moves the thread into the sandbox's namespace at path,
// of the kind of flag.
func joinNamespace(path string, flag int, what string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening the sandbox's %s namespace: %w", what, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, flag); err != nil {
		return fmt.Errorf("entering the sandbox's %s namespace: %w", what, err)
	}
	return nil
}
