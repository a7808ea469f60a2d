package embedded

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// overlaySupported tries an overlay mount in a scratch directory under
// dir: overlayfs may be missing, or dir may sit on a filesystem that
// cannot hold an upper layer (such as another overlay).
func overlaySupported(dir string) bool {
	scratch, err := os.MkdirTemp(dir, ".overlay-probe-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(scratch)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(scratch, d), 0o755); err != nil {
			return false
		}
	}
	j := func(d string) string { return filepath.Join(scratch, d) }
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", j("lower"), j("upper"), j("work"))
	if err := unix.Mount("overlay", j("merged"), "overlay", 0, opts); err != nil {
		return false
	}
	unix.Unmount(j("merged"), unix.MNT_DETACH)
	return true
}

// copyTree copies the tree at src to dst, keeping modes, owners, times,
// symlinks and hard links: the root filesystem of a container where
// overlayfs is not available.
func copyTree(src, dst string) error {
	links := map[uint64]string{} // inode → first copy, for hard links
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		switch mode := info.Mode(); {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case mode.IsRegular():
			if first, ok := links[st.Ino]; ok && st.Nlink > 1 {
				return os.Link(first, target)
			}
			if err := copyFile(p, target); err != nil {
				return err
			}
			links[st.Ino] = target
		default:
			if err := unix.Mknod(target, st.Mode, int(st.Rdev)); err != nil {
				return err
			}
		}
		if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			if err := os.Chmod(target, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
				return err
			}
		}
		ts := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(st.Mtim.Nano())}
		return unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
