package images

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// flock takes a flock(2) lock on path, creating the file if needed, and
// returns the function that releases it. Each call opens the file anew,
// so the lock also orders goroutines of one process.
func flock(path string, exclusive bool) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("images: lock: %w", err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("images: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
