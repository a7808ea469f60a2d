// Package atomicfile replaces files so that readers see the old content
// or the new, never a part. It imports only the standard library, so that
// the runtime's small helper binary can use it too.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data, with exactly perm whatever the umask,
// through a temporary file in the same directory. With durable, the data
// reaches the disk before the rename, so that a crash of the machine
// leaves the old content or the new; without, only a crash of processes
// is covered (state that a reboot makes moot anyway).
func Write(path string, data []byte, perm os.FileMode, durable bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	err = tmp.Chmod(perm)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	return nil
}
