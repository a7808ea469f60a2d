package network

import (
	"cairn/internal/nsthread"
)

// NewNetNS creates a network namespace and keeps it alive by bind
// mounting it on path (like `ip netns add`), so that it outlives every
// process in it, including the agent. The namespace starts empty, with
// its loopback device down.
func NewNetNS(path string) error { return nsthread.New(nsthread.Net, path) }

// RemoveNetNS unmounts and deletes a namespace made by NewNetNS. The
// namespace itself goes away with its last process. A missing path is
// not an error.
func RemoveNetNS(path string) error { return nsthread.Remove(path) }

// IsNetNS reports whether path is a mounted network namespace, as after
// an agent restart, while it is lost after a reboot.
func IsNetNS(path string) bool { return nsthread.IsNamespace(path) }
