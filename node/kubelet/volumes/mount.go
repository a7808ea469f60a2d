package volumes

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes (unbounded when 0) and root
// mode on dir unless one is there already.
func mountTmpfs(dir string, size int64, mode os.FileMode) error {
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		return nil
	}
	opts := fmt.Sprintf("mode=%#o", mode.Perm())
	if size > 0 {
		opts += ",size=" + strconv.FormatInt(size, 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
	}
	return nil
}

// mountPoints returns the mount points of this mount namespace.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMount decodes the octal escapes of mountinfo paths (\040 for a
// space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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

// isMountPoint reports whether dir is the root of a mount. statx says
// so in one call; reading mountinfo instead costs a parse of every
// mount of the namespace, which grows with the pods on the node and
// showed in a burst of pod starts. Kernels before 5.8 do not tell, and
// get mountinfo.
func isMountPoint(dir string) (bool, error) {
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_TYPE, &stx)
	if err != nil {
		return false, &os.PathError{Op: "statx", Path: dir, Err: err}
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	return inMountinfo(dir)
}

// inMountinfo reports whether dir is a mount point of this mount
// namespace's mountinfo.
func inMountinfo(dir string) (bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	points, err := mountPoints()
	if err != nil {
		return false, err
	}
	return slices.Contains(points, abs), nil
}

// unmountUnder unmounts every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	points, err := mountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, p := range points {
		if p == abs || strings.HasPrefix(p, abs+"/") {
			under = append(under, p)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(under)))
	for _, p := range under {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			return fmt.Errorf("volumes: unmounting %s: %w", p, err)
		}
	}
	return nil
}
