package devcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mount is one line of /proc/self/mountinfo.
type mount struct {
	// Root is the mounted directory inside its filesystem.
	Root string
	// Point is the mount point; FSType the filesystem type.
	Point, FSType string
	// Options are the filesystem's own options (after " - ").
	Options string
}

// readMounts parses mountinfo.
func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	defer f.Close()
	return parseMountInfo(f)
}

// parseMountInfo reads mountinfo lines such as
//
//	36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory
func parseMountInfo(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, tail := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(tail) < 1 {
			continue
		}
		m := mount{Root: unescapeMount(f[3]), Point: unescapeMount(f[4]), FSType: tail[0]}
		if len(tail) >= 3 {
			m.Options = tail[2]
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("devcluster: reading mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space) in
// mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// below reports whether p lies strictly inside dir.
func below(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimRight(dir, "/")+"/")
}

// unmountBelow detaches every mount strictly inside each of dirs, deepest
// first, so that no mount hides another. The directories themselves are
// left alone: a state directory may well be a mount point of its own.
func unmountBelow(dirs ...string) error {
	mounts, err := readMounts()
	if err != nil {
		return err
	}
	var points []string
	for _, m := range mounts {
		for _, d := range dirs {
			if below(m.Point, d) {
				points = append(points, m.Point)
				break
			}
		}
	}
	// Deeper paths sort after their parents; undo in reverse. A point
	// mounted twice appears twice and is unmounted twice.
	sort.Strings(points)
	var errs []error
	for i := len(points) - 1; i >= 0; i-- {
		if err := unix.Unmount(points[i], unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("devcluster: unmounting %s: %w", points[i], err))
		}
	}
	return errors.Join(errs...)
}

// isBPFFS reports whether dir is on a bpf filesystem.
func isBPFFS(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.BPF_FS_MAGIC
}

// mountBPFFS mounts a private bpf filesystem on dir, where the agents pin
// their eBPF maps and links: unmounting it at the end drops them all.
func mountBPFFS(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	if isBPFFS(dir) {
		return nil
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		return fmt.Errorf("devcluster: mounting a bpf filesystem on %s: %w", dir, err)
	}
	return nil
}
