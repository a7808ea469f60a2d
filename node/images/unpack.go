package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Unpack returns the image a reference names and the directory holding
// its root filesystem, unpacking the layers if Import or Pull has not
// (the result is shared by every container of the image and must not be
// written to). The lease, typically a container ID, keeps the directory
// on disk until Release, even if the image is removed meanwhile.
func (s *Store) Unpack(ctx context.Context, ref, lease string) (Image, string, error) {
	if lease == "" || strings.ContainsAny(lease, "/.") {
		return Image{}, "", fmt.Errorf("images: invalid lease %q", lease)
	}
	var img Image
	var dir string
	err := s.withRootfs(ctx, ref, func(i Image, d string) error {
		img, dir = i, d
		leases := d + ".leases"
		if err := os.MkdirAll(leases, 0o700); err != nil {
			return fmt.Errorf("images: %w", err)
		}
		if err := os.WriteFile(filepath.Join(leases, lease), nil, 0o600); err != nil {
			return fmt.Errorf("images: %w", err)
		}
		return nil
	})
	return img, dir, err
}

// ensureUnpacked unpacks the root filesystems of imgs that are not yet,
// as containerd does on pull: the first container of an image then
// starts without waiting for its layers.
func (s *Store) ensureUnpacked(ctx context.Context, imgs []Image) error {
	for _, img := range imgs {
		if err := s.withRootfs(ctx, img.ID, func(Image, string) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

// withRootfs calls fn with the image ref names and the directory of its
// unpacked root filesystem, unpacking it first if needed, while holding
// the store lock shared, and the image's lock exclusively if it had to
// look for an unpack.
func (s *Store) withRootfs(ctx context.Context, ref string, fn func(Image, string) error) error {
	// The shared store lock keeps blobs and unpacked trees from being
	// collected while we read them and take the lease.
	unlock, err := flock(s.path("lock"), false)
	if err != nil {
		return err
	}
	defer unlock()
	img, err := s.Get(ref)
	if err != nil {
		return err
	}
	id := strings.TrimPrefix(img.ID, "sha256:")
	dir := s.path("rootfs", id)
	// A tree appears whole (unpack renames it into place) and only goes
	// under the store lock held exclusively: once it is there, the
	// containers of an image need not queue on the image's lock.
	if _, err := os.Stat(dir); err == nil {
		return fn(img, dir)
	}
	unlockImage, err := flock(s.path("rootfs", id+".lock"), true)
	if err != nil {
		return err
	}
	defer unlockImage()
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := s.unpack(ctx, img, dir); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	return fn(img, dir)
}

// Release drops a lease taken by Unpack. The unpacked tree of an image
// that was removed goes with its last lease.
func (s *Store) Release(id, lease string) error {
	id = strings.TrimPrefix(id, "sha256:")
	if !isDigest("sha256:"+id) || lease == "" || strings.ContainsAny(lease, "/.") {
		return fmt.Errorf("images: invalid release of %q by %q", id, lease)
	}
	unlock, err := flock(s.path("lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(s.path("rootfs", id+".leases", lease)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("images: %w", err)
	}
	if _, err := s.Get("sha256:" + id); errors.Is(err, ErrNotFound) {
		return s.removeRootfs(id)
	}
	return nil
}

// removeRootfs deletes an unpacked tree nobody leases. The caller holds
// the store lock exclusively.
func (s *Store) removeRootfs(id string) error {
	leases := s.path("rootfs", id+".leases")
	if entries, _ := os.ReadDir(leases); len(entries) > 0 {
		return nil
	}
	for _, p := range []string{s.path("rootfs", id), leases, s.path("rootfs", id+".lock")} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("images: %w", err)
		}
	}
	return nil
}

// unpack applies the layers of img in order into a temporary directory,
// then renames it to dir, so that a crash never leaves half a tree under
// the final name.
func (s *Store) unpack(ctx context.Context, img Image, dir string) error {
	h, err := v1.NewHash(img.Manifest)
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	vimg, err := layout.Path(s.dir).Image(h)
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	layers, err := vimg.Layers()
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	tmp, err := os.MkdirTemp(s.path("rootfs"), ".unpack-")
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("images: %w", err)
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return fmt.Errorf("images: layer %d of %s: %w", i, img.ID, err)
		}
		err = applyLayer(ctx, tmp, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("images: layer %d of %s: %w", i, img.ID, err)
		}
	}
	if err := addMountPoints(tmp); err != nil {
		return fmt.Errorf("images: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("images: %w", err)
	}
	s.log.Debug("unpacked image", "id", img.ID, "layers", len(layers))
	return nil
}

// mountPoints are paths the embedded runtime mounts over in every
// container (with its pod's /etc files). An unpacked tree gets those it
// lacks, so that starting a container does not make them in its own
// writable layer: a copy-up of /etc and four new inodes per container,
// on the path of every start.
var mountPoints = []struct {
	rel string
	dir bool
}{
	{"proc", true}, {"dev", true}, {"sys", true},
	{"etc/hosts", false}, {"etc/hostname", false}, {"etc/resolv.conf", false},
}

// addMountPoints adds the missing mount points to the tree at root. A
// path the image holds, even as a symlink, is left as it is, and so is
// everything under a parent that is not a plain directory: the runtime
// resolves those inside the container, as before.
func addMountPoints(root string) error {
	for _, m := range mountPoints {
		target := filepath.Join(root, m.rel)
		// Dir, not Split: a trailing slash would make Lstat follow a
		// symlink out of the tree.
		parent := filepath.Dir(target)
		fi, err := os.Lstat(parent)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(parent, 0o755); err != nil {
				return err
			}
		} else if err != nil {
			return err
		} else if !fi.IsDir() {
			continue
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if m.dir {
			err = os.Mkdir(target, 0o755)
		} else {
			err = os.WriteFile(target, nil, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
