package helper

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cairn/internal/rootfs"
)

// lookPathIn finds a command in the PATH of env, in the tree at root
// (a container's, through /proc/PID/root), resolving symlinks there as
// the kernel will for the chrooted command.
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
		host, err := rootfs.ResolveIn(root, p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(host); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}
