package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"cairn/internal/nsthread"

	"golang.org/x/sys/unix"
)

// NewNetNS creates a network namespace and keeps it alive by bind
// mounting it on path (like `ip netns add`), so that it outlives every
// process in it, including the agent. The namespace starts empty, with
// its loopback device down.
func NewNetNS(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("network: creating netns %s: %w", path, err)
	}
	f.Close()
	err = nsthread.On(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("network: unshare: %w", err)
		}
		return nil
	}, func() error {
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("network: bind mounting netns on %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// RemoveNetNS unmounts and deletes a namespace made by NewNetNS. The
// namespace itself goes away with its last process. A missing path is
// not an error.
func RemoveNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("network: unmounting netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network: %w", err)
	}
	return nil
}

// IsNetNS reports whether path is a mounted network namespace, as after
// an agent restart, while it is lost after a reboot.
func IsNetNS(path string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false
	}
	return fs.Type == unix.NSFS_MAGIC
}
