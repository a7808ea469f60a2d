package embedded

import (
	"sync"

	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
)

// shimWatch holds a pidfd on a container's shim once the runtime has
// seen it alive. Every status of a running container asks whether its
// shim still runs; a poll of the pidfd answers without reading and
// parsing the shim's /proc stat each time, which a burst of pod starts
// felt. A pidfd names one process for good, so a reused pid cannot fool
// it.
type shimWatch struct {
	mu    sync.Mutex
	pid   int
	start uint64
	fd    int // the pidfd, while set
	set   bool
}

// alive reports whether the shim pid, started at start, still runs.
func (w *shimWatch) alive(pid int, start uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.set && w.pid == pid && w.start == start {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err == nil {
			// A pidfd polls readable once its process has exited.
			if n == 0 {
				return true
			}
			w.closeLocked()
			return false
		}
		w.closeLocked()
	}
	if !helper.Alive(pid, start) {
		return false
	}
	w.watchLocked(pid, start)
	return true
}

// watchLocked opens a pidfd on the shim, and keeps it if the process it
// names is still the one that started at start (the pid may have been
// reused between the check and the open).
func (w *shimWatch) watchLocked(pid int, start uint64) {
	w.closeLocked()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	if !helper.Alive(pid, start) {
		unix.Close(fd)
		return
	}
	w.pid, w.start, w.fd, w.set = pid, start, fd, true
}

func (w *shimWatch) closeLocked() {
	if w.set {
		unix.Close(w.fd)
		w.set = false
	}
}

// close drops the watch, when the container goes.
func (w *shimWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeLocked()
}
