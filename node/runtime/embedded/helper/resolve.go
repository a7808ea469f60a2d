package helper

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks bounds the symlinks followed resolving one path, as
// Linux's MAXSYMLINKS does.
const maxSymlinks = 40

// resolveIn returns the host path of p inside the tree at root, following
// symlinks as if root were "/": absolute links and ".." never leave root.
// Components that do not exist yet are kept as they are.
//
// It resolves paths exactly as the node images package's ResolveIn,
// which the helper cannot import without the image registry clients.
func resolveIn(root, p string) (string, error) {
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
			return "", fmt.Errorf("helper: resolving %s in %s: %w", p, root, unix.ELOOP)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", fmt.Errorf("helper: %w", err)
		}
		if path.IsAbs(target) {
			resolved = ""
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return filepath.Join(root, resolved), nil
}
