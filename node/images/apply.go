package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"cairn/internal/rootfs"

	"golang.org/x/sys/unix"
)

// Whiteout markers of the OCI layer format: ".wh.NAME" deletes NAME from
// the layers below, and ".wh..wh..opq" empties its directory of them.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// applyLayer applies one uncompressed layer onto the tree at root:
// entries replace what lower layers left at their paths, and whiteouts
// delete. Paths and symlinks resolve inside root, so that no layer can
// write outside it.
func applyLayer(ctx context.Context, root string, r io.Reader) error {
	tr := tar.NewReader(r)
	added := map[string]bool{}
	type dirTime struct {
		path  string
		mtime time.Time
	}
	var dirs []dirTime
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		if rel == "" {
			continue
		}
		dirRel, base := path.Split(rel)
		parent, err := rootfs.ResolveIn(root, dirRel)
		if err != nil {
			return err
		}
		switch {
		case base == whiteoutOpaque:
			if err := emptyDir(parent, strings.TrimSuffix(dirRel, "/"), added); err != nil {
				return err
			}
			continue
		case strings.HasPrefix(base, whiteoutPrefix):
			if err := os.RemoveAll(filepath.Join(parent, strings.TrimPrefix(base, whiteoutPrefix))); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return err
		}
		target := filepath.Join(parent, base)
		if err := createEntry(root, target, hdr, tr); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		added[rel] = true
		if hdr.Typeflag == tar.TypeDir {
			dirs = append(dirs, dirTime{target, hdr.ModTime})
		}
	}
	// Directory times last: creating their children changed them.
	for i := len(dirs) - 1; i >= 0; i-- {
		setTimes(dirs[i].path, dirs[i].mtime)
	}
	return nil
}

// createEntry creates one tar entry at target, replacing whatever is
// there unless both are directories.
func createEntry(root, target string, hdr *tar.Header, r io.Reader) error {
	if fi, err := os.Lstat(target); err == nil && !(fi.IsDir() && hdr.Typeflag == tar.TypeDir) {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	mode := hdr.FileInfo().Mode()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	case tar.TypeReg, tar.TypeRegA:
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return err
		}
	case tar.TypeLink:
		dir, base := path.Split(strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/"))
		parent, err := rootfs.ResolveIn(root, dir)
		if err != nil {
			return err
		}
		// A hard link to a symlink links the symlink itself, which the
		// kernel's link(2) does without following it.
		return os.Link(filepath.Join(parent, base), target)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		kind := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[hdr.Typeflag]
		dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
		if err := unix.Mknod(target, kind|uint32(mode.Perm()), int(dev)); err != nil {
			// Device nodes need privileges an unprivileged store lacks;
			// containers get their /dev from the runtime anyway.
			if errors.Is(err, unix.EPERM) {
				return nil
			}
			return err
		}
	default:
		return nil
	}
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil && !(errors.Is(err, unix.EPERM) && os.Geteuid() != 0) {
		return err
	}
	for k, v := range hdr.PAXRecords {
		if attr, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
			// Best effort, as with tar(1): the filesystem may not
			// support the namespace (security.*, trusted.*).
			unix.Lsetxattr(target, attr, []byte(v), 0)
		}
	}
	if hdr.Typeflag != tar.TypeSymlink {
		// After chown, which clears the setuid and setgid bits.
		if err := os.Chmod(target, mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
	}
	if hdr.Typeflag != tar.TypeDir {
		setTimes(target, hdr.ModTime)
	}
	return nil
}

// emptyDir removes the entries of dir (at rel in the image) that the
// current layer did not add: an opaque whiteout hides lower layers only.
func emptyDir(dir, rel string, added map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if added[path.Join(rel, e.Name())] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func setTimes(p string, mtime time.Time) {
	ts := unix.NsecToTimespec(mtime.UnixNano())
	unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
}
