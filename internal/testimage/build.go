package testimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the modification time of every file in a built layer, so that
// the same inputs always give the same digests.
func epoch() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }

// File is one entry of a layer built by Layer.
type File struct {
	// Path is the path inside the image, without a leading slash.
	Path string
	// Mode holds the permission bits and, for directories and symlinks,
	// fs.ModeDir or fs.ModeSymlink. A zero Mode means 0644 for files.
	Mode fs.FileMode
	// Data is the content of a regular file.
	Data []byte
	// Link is the target of a symlink, or of a hard link when Hardlink is set.
	Link string
	// Hardlink makes the entry a hard link to Link.
	Hardlink bool
	// UID and GID own the entry.
	UID, GID int
}

// Layer returns an OCI layer holding files, in the given order, with
// entries for their parent directories added before them where files
// does not list them.
func Layer(files []File) (v1.Layer, error) {
	raw, err := layerTar(files)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
}

func layerTar(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	var addDir func(dir string) error
	addDir = func(dir string) error {
		if dir == "." || dir == "/" || dir == "" || seen[dir] {
			return nil
		}
		if err := addDir(path.Dir(dir)); err != nil {
			return err
		}
		seen[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch(), Format: tar.FormatPAX})
	}
	for _, f := range files {
		name := strings.Trim(path.Clean("/"+f.Path), "/")
		if name == "" {
			continue
		}
		if err := addDir(path.Dir(name)); err != nil {
			return nil, err
		}
		hdr := &tar.Header{Name: name, Uid: f.UID, Gid: f.GID, ModTime: epoch(), Format: tar.FormatPAX}
		perm := int64(f.Mode.Perm())
		if f.Mode&fs.ModeSetuid != 0 {
			perm |= 0o4000
		}
		if f.Mode&fs.ModeSetgid != 0 {
			perm |= 0o2000
		}
		switch {
		case f.Mode&fs.ModeDir != 0:
			if seen[name] {
				continue
			}
			seen[name] = true
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", perm
			if f.Mode&fs.ModeSticky != 0 {
				hdr.Mode |= 0o1000
			}
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
		case f.Hardlink:
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeLink, strings.TrimPrefix(f.Link, "/"), perm
		default:
			if perm&0o777 == 0 {
				perm |= 0o644
			}
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, perm, int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("testimage: %s: %w", name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("testimage: %s: %w", name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Image returns an OCI image for this machine's platform made of layers
// (bottom first) with the given run configuration.
func Image(cfg v1.Config, layers ...v1.Layer) (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch()}
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("testimage: %w", err)
	}
	return img, nil
}

// sortedKeys returns the keys of m in order, for reproducible archives.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
