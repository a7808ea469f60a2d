package helper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cairn/internal/rootfs"

	"golang.org/x/sys/unix"
)

// device is a device node an unprivileged container gets.
type device struct {
	name         string
	major, minor uint32
}

// devices are the device nodes of an unprivileged container's /dev, with
// the numbers Linux gives them everywhere.
func devices() []device {
	return []device{{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}}
}

// etcFiles are the files the runtime provides in every container from
// its sandbox's directory, unless a CRI mount provides them.
func etcFiles() []string { return []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"} }

// setupRootfs builds the container's filesystem at root, in the
// container's own mount namespace: nothing mounted here is visible on
// the host, and all of it goes away with the container's last process.
// All but /proc: only a process in the container's PID namespace can
// mount that one, so the container's first process mounts it, and
// handles the masked and read-only paths inside it (see forkChild).
func setupRootfs(dir, root string, sp *Spec) error {
	// Slave: host mounts still propagate in (volumes asking for
	// HostToContainer need it), nothing propagates out.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making / a slave mount: %w", err)
	}
	if sp.Overlay {
		opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", sp.ImageRoot, filepath.Join(dir, "upper"), filepath.Join(dir, "work"))
		if err := unix.Mount("overlay", root, "overlay", 0, opts); err != nil {
			return fmt.Errorf("mounting the root overlay: %w", err)
		}
	} else if err := unix.Mount(filepath.Join(dir, "copy"), root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mounting the root filesystem: %w", err)
	}
	if _, err := inRoot(root, "/proc", true); err != nil {
		return fmt.Errorf("making the mount point of /proc: %w", err)
	}
	steps := []func(string, *Spec) error{mountDev, mountSys, mountEtcFiles, mountVolumes, maskPaths}
	for _, step := range steps {
		if err := step(root, sp); err != nil {
			return err
		}
	}
	return nil
}

// inRoot resolves a container path to a host path inside root, creating
// it as a directory or an empty file if missing.
func inRoot(root, p string, dir bool) (string, error) {
	target, err := rootfs.ResolveIn(root, p)
	if err != nil {
		return "", err
	}
	if dir {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return "", err
		}
		return target, nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", err
	}
	if _, err := os.Stat(target); errors.Is(err, os.ErrNotExist) {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		f.Close()
	}
	return target, nil
}

func mountDev(root string, sp *Spec) error {
	dev, err := inRoot(root, "/dev", true)
	if err != nil {
		return err
	}
	if sp.Privileged {
		if err := unix.Mount("/dev", dev, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mounting the host's /dev: %w", err)
		}
		// Still the pod's /dev/shm, shared with its other containers.
		if sp.Shm != "" {
			if err := unix.Mount(sp.Shm, filepath.Join(dev, "shm"), "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("mounting /dev/shm: %w", err)
			}
		}
		return nil
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_STRICTATIME, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	// Made, not bind mounted from the host: a node costs the kernel far
	// less than a mount, which copies and locks the mount tree. The
	// umask is this thread's own since its unshare.
	defer unix.Umask(unix.Umask(0))
	for _, d := range devices() {
		if err := unix.Mknod(filepath.Join(dev, d.name), unix.S_IFCHR|0o666, int(unix.Mkdev(d.major, d.minor))); err != nil {
			return fmt.Errorf("making /dev/%s: %w", d.name, err)
		}
	}
	// /dev/shm is the pod's when its containers share an IPC namespace,
	// the host's on the host's, else the container's own. A fresh
	// mqueue shows the queues of the IPC namespace the thread is in.
	shm := struct{ source, fstype, data string }{"shm", "tmpfs", "mode=1777,size=65536k"}
	switch {
	case sp.Shm != "":
		shm.source, shm.fstype, shm.data = sp.Shm, "", ""
	case sp.HostIPC:
		shm.source, shm.fstype, shm.data = "/dev/shm", "", ""
	}
	for _, m := range []struct{ dir, source, fstype, data string }{
		{"pts", "devpts", "devpts", "newinstance,ptmxmode=0666,mode=0620"},
		{"shm", shm.source, shm.fstype, shm.data},
		{"mqueue", "mqueue", "mqueue", ""},
	} {
		target := filepath.Join(dev, m.dir)
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		flags := uintptr(unix.MS_NOSUID | unix.MS_NOEXEC)
		if m.fstype == "" {
			flags = unix.MS_BIND
		} else if m.fstype != "devpts" {
			flags |= unix.MS_NODEV
		}
		if err := unix.Mount(m.source, target, m.fstype, flags, m.data); err != nil {
			return fmt.Errorf("mounting /dev/%s: %w", m.dir, err)
		}
	}
	for link, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore",
	} {
		if err := os.Symlink(target, filepath.Join(dev, link)); err != nil {
			return err
		}
	}
	return nil
}

func mountSys(root string, sp *Spec) error {
	target, err := inRoot(root, "/sys", true)
	if err != nil {
		return err
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if !sp.Privileged {
		flags |= unix.MS_RDONLY
	}
	// A fresh sysfs shows the network devices of the container's own
	// namespace; for pods on the host network, the host's.
	if err := unix.Mount("sysfs", target, "sysfs", flags, ""); err == nil {
		return nil
	}
	if err := unix.Mount("/sys", target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mounting /sys: %w", err)
	}
	if sp.Privileged {
		return nil
	}
	return remountReadonly(target)
}

func remountReadonly(target string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(target, &st); err != nil {
		return err
	}
	// A read-only remount of a bind mount must keep the flags the source
	// mount has (nosuid, nodev...), or the kernel refuses it.
	flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY) | uintptr(st.Flags)&(unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_NOATIME|unix.MS_NODIRATIME|unix.MS_RELATIME)
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("remounting %s read-only: %w", target, err)
	}
	return nil
}

// mountEtcFiles bind mounts the sandbox's hosts, hostname and
// resolv.conf, unless the kubelet mounts its own.
func mountEtcFiles(root string, sp *Spec) error {
	sandboxDir := sp.EtcDir
	for _, p := range etcFiles() {
		if sandboxDir == "" || sp.hasMount(p) {
			continue
		}
		src := filepath.Join(sandboxDir, filepath.Base(p))
		if _, err := os.Stat(src); err != nil {
			continue
		}
		target, err := inRoot(root, p, false)
		if err != nil {
			return err
		}
		if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("mounting %s: %w", p, err)
		}
	}
	return nil
}

// mountVolumes bind mounts the CRI mounts (volumes the kubelet prepared
// on the host), in order, so that nested ones land on their parents.
func mountVolumes(root string, sp *Spec) error {
	for _, m := range sp.Mounts {
		fi, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("volume for %s: %w", m.Target, err)
		}
		target, err := inRoot(root, m.Target, fi.IsDir())
		if err != nil {
			return fmt.Errorf("volume for %s: %w", m.Target, err)
		}
		if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mounting %s on %s: %w", m.Source, m.Target, err)
		}
		prop := map[string]uintptr{"rslave": unix.MS_SLAVE, "rshared": unix.MS_SHARED}[m.Propagation]
		if prop == 0 {
			prop = unix.MS_PRIVATE
		}
		if err := unix.Mount("", target, "", unix.MS_REC|prop, ""); err != nil {
			return fmt.Errorf("setting propagation of %s: %w", m.Target, err)
		}
		if m.Readonly {
			if err := remountReadonly(target); err != nil {
				return err
			}
		}
	}
	return nil
}

// maskPaths hides sensitive kernel files and makes others read-only,
// but for those in /proc, not mounted yet.
func maskPaths(root string, sp *Spec) error {
	for _, p := range sp.MaskedPaths {
		if inProc(p) {
			continue
		}
		target, err := rootfs.ResolveIn(root, p)
		if err != nil {
			return err
		}
		fi, err := os.Stat(target)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY, "size=0")
		} else {
			err = unix.Mount("/dev/null", target, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("masking %s: %w", p, err)
		}
	}
	for _, p := range sp.ReadonlyPaths {
		if inProc(p) {
			continue
		}
		target, err := rootfs.ResolveIn(root, p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(target); err != nil {
			continue
		}
		if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", p, err)
		}
		if err := remountReadonly(target); err != nil {
			return err
		}
	}
	return nil
}

// hasMount reports whether a CRI mount targets the container path p.
func (sp *Spec) hasMount(p string) bool {
	for _, m := range sp.Mounts {
		if filepath.Clean("/"+m.Target) == p || strings.TrimSuffix(m.Target, "/") == p {
			return true
		}
	}
	return false
}
