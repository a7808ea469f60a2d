// Package rootfs resolves paths inside a container's or an image's root
// filesystem from the host. It imports only the standard library and
// x/sys/unix, so that the runtime's small helper binary can use it.
package rootfs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks bounds the symlinks followed resolving one path, as Linux's
// MAXSYMLINKS does.
const maxSymlinks = 40

// ResolveIn returns the host path of p inside the tree at root, following
// symlinks as if root were "/": absolute links and ".." never leave root.
// Components that do not exist yet are kept as they are.
func ResolveIn(root, p string) (string, error) {
	resolved := ""
	pending := strings.Split(p, "/")
	links := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			if resolved == "." || resolved == "/" {
				resolved = ""
			}
			continue
		}
		next := path.Join(resolved, c)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("rootfs: resolving %s in %s: %w", p, root, unix.ELOOP)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", fmt.Errorf("rootfs: %w", err)
		}
		if path.IsAbs(target) {
			resolved = ""
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return filepath.Join(root, resolved), nil
}
