package embedded

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"cairn/node/runtime/embedded/helper"

	"golang.org/x/sys/unix"
)

// stateCache keeps a container's state.json as last read, keyed by the
// file's identity (inode, size, modification and change times), so that
// a stat replaces reading and decoding the file on every status the
// kubelet asks for. Writers replace the file whole, so each version has
// its own inode while it exists; a later version reusing the inode
// number within one tick of the clock still differs in size where a
// status depends on it (the exit adds finishedAt and a reason). Only a
// log reopen count could be missed so, which no status shows.
type stateCache struct {
	mu  sync.Mutex
	key fileKey
	st  helper.State
}

// fileKey is what identifies a version of a file.
type fileKey struct {
	ino, size    uint64
	mtime, ctime unix.StatxTimestamp
}

// read returns the state in dir, as helper.ReadState does.
func (c *stateCache) read(dir string) (helper.State, bool, error) {
	path := filepath.Join(dir, "state.json")
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_INO|unix.STATX_SIZE|unix.STATX_MTIME|unix.STATX_CTIME, &stx); err != nil {
		c.forget()
		if errors.Is(err, unix.ENOENT) {
			return helper.State{}, false, nil
		}
		return helper.State{}, false, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	key := fileKey{ino: stx.Ino, size: stx.Size, mtime: stx.Mtime, ctime: stx.Ctime}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.key == key {
		return c.st, true, nil
	}
	st, ok, err := helper.ReadState(dir)
	if err != nil || !ok {
		c.key = fileKey{}
		return st, ok, err
	}
	// Read after the stat: if the file was replaced in between, the next
	// stat differs from key and reads again.
	c.key, c.st = key, st
	return st, true, nil
}

func (c *stateCache) forget() {
	c.mu.Lock()
	c.key = fileKey{}
	c.mu.Unlock()
}
