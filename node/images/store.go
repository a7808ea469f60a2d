package images

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cairn/internal/atomicfile"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"
)

// ErrNotFound is returned for an image the store does not hold.
var ErrNotFound = errors.New("images: image not found")

// Annotations of index entries. The name annotation is the one
// containerd and Docker write in OCI layouts, so that a store can be
// exported as is.
const (
	annotationName       = "io.containerd.image.name"
	annotationRefName    = "org.opencontainers.image.ref.name"
	annotationRepoDigest = "io.cairn.image.repo-digest"
)

// staleTemp is how old a leftover temporary directory must be before
// Open removes it: younger ones may belong to an import in progress in
// another process.
const staleTemp = time.Hour

// Config configures a Store.
type Config struct {
	// Dir is the store directory (see Dir for the one under an agent's
	// data directory).
	Dir string
	// Logger receives pulls, imports and removals; nil discards them.
	Logger *slog.Logger
	// InsecureRegistries are registry hosts (host:port) reached over
	// plain HTTP. Loopback registries always are.
	InsecureRegistries []string
}

// Store holds images on disk. It keeps no state in memory beyond its
// configuration: every call reads the index anew, so several processes
// can share one store.
type Store struct {
	dir      string
	log      *slog.Logger
	insecure []string
	platform v1.Platform
	// described caches describe's reading of a manifest and its config
	// by manifest digest: blobs are content-addressed, so an entry never
	// goes stale, and the runtime looks images up on every container
	// start.
	described sync.Map // manifest digest → Image, without names
	// listed caches the images of the index file it read (see
	// indexStamp), for the same lookups: `cairn image import` may change
	// the index from another process meanwhile.
	listed atomic.Pointer[listing]
}

// listing is the images of one index file, shared: callers get copies.
type listing struct {
	stamp indexStamp
	imgs  []Image
}

// indexStamp tells one index.json from another: every write replaces
// the file (a new inode), and one written within the last moments is
// never trusted, since a clock tick holds many writes.
type indexStamp struct {
	ino, size, mtime, ctime int64
}

// indexSettled is how old an index must be before it is cached.
var indexSettled = 2 * time.Second

// Image describes an image in the store.
type Image struct {
	// ID is the digest of the image's config ("sha256:..."), the image ID
	// of the CRI.
	ID string
	// Manifest is the digest of the image's manifest.
	Manifest string
	// RepoTags are the normalised names the image is known by.
	RepoTags []string
	// RepoDigests are "repository@digest" references to the manifest
	// the image was pulled by.
	RepoDigests []string
	// Size is the size of the config and compressed layers, in bytes.
	Size int64
	// Config is the image's run configuration (user, env, entrypoint...).
	Config v1.Config
}

// Dir returns the store directory under an agent data directory.
func Dir(dataDir string) string { return filepath.Join(dataDir, "images") }

// Open opens or creates the store in cfg.Dir.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("images: no store directory given")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		dir:      cfg.Dir,
		log:      log,
		insecure: cfg.InsecureRegistries,
		platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
	}
	for _, d := range []string{s.blobDir(), s.path("rootfs"), s.path("tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("images: %w", err)
		}
	}
	unlock, err := flock(s.path("lock"), true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(s.path("index.json")); errors.Is(err, os.ErrNotExist) {
		if err := s.writeIndex(&v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}); err != nil {
			return nil, err
		}
	}
	if err := atomicfile.Write(s.path("oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o600, true); err != nil {
		return nil, err
	}
	s.removeStaleTemp()
	return s, nil
}

func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

func (s *Store) blobDir() string { return s.path("blobs", "sha256") }

func (s *Store) blobPath(digest string) string {
	return filepath.Join(s.blobDir(), strings.TrimPrefix(digest, "sha256:"))
}

// List returns every image in the store, one per image ID.
func (s *Store) List() ([]Image, error) {
	imgs, err := s.indexed()
	if err != nil {
		return nil, err
	}
	out := make([]Image, len(imgs))
	for i, img := range imgs {
		out[i] = cloneImage(img)
	}
	return out, nil
}

// indexed returns every image in the store, from the cache while the
// index file is the one it was read from. The slice is shared: callers
// copy what they hand out.
func (s *Store) indexed() ([]Image, error) {
	stamp, settled := s.stampIndex()
	if l := s.listed.Load(); settled && l != nil && l.stamp == stamp {
		return l.imgs, nil
	}
	imgs, err := s.list()
	if err == nil && settled {
		s.listed.Store(&listing{stamp: stamp, imgs: imgs})
	}
	return imgs, err
}

// stampIndex returns the index file's stamp, and whether it is old
// enough to cache what it says.
func (s *Store) stampIndex() (indexStamp, bool) {
	var st unix.Stat_t
	if err := unix.Stat(s.path("index.json"), &st); err != nil {
		return indexStamp{}, false
	}
	mtime, ctime := st.Mtim.Nano(), st.Ctim.Nano()
	stamp := indexStamp{ino: int64(st.Ino), size: st.Size, mtime: mtime, ctime: ctime}
	return stamp, time.Since(time.Unix(0, max(mtime, ctime))) > indexSettled
}

// cloneImage is a copy of img that shares nothing with it.
func cloneImage(img Image) Image {
	img.RepoTags = slices.Clone(img.RepoTags)
	img.RepoDigests = slices.Clone(img.RepoDigests)
	img.Config = *img.Config.DeepCopy()
	return img
}

func (s *Store) list() ([]Image, error) {
	idx, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	var out []Image
	byID := map[string]int{}
	for _, d := range idx.Manifests {
		img, err := s.describe(d)
		if err != nil {
			s.log.Warn("skipping an unreadable image", "manifest", d.Digest, "err", err)
			continue
		}
		i, seen := byID[img.ID]
		if !seen {
			byID[img.ID] = len(out)
			out = append(out, img)
			continue
		}
		for _, t := range img.RepoTags {
			if !slices.Contains(out[i].RepoTags, t) {
				out[i].RepoTags = append(out[i].RepoTags, t)
			}
		}
		for _, t := range img.RepoDigests {
			if !slices.Contains(out[i].RepoDigests, t) {
				out[i].RepoDigests = append(out[i].RepoDigests, t)
			}
		}
	}
	return out, nil
}

// Get returns the image a reference names: an image ID or manifest
// digest ("sha256:..."), a name ("busybox", "busybox:1.36") or a
// repository digest ("busybox@sha256:...").
func (s *Store) Get(ref string) (Image, error) {
	imgs, err := s.indexed()
	if err != nil {
		return Image{}, err
	}
	img, err := find(imgs, ref)
	if err != nil {
		return Image{}, err
	}
	return cloneImage(img), nil
}

func find(imgs []Image, ref string) (Image, error) {
	if isDigest(ref) {
		for _, img := range imgs {
			if img.ID == ref || img.Manifest == ref {
				return img, nil
			}
		}
		return Image{}, fmt.Errorf("%w: %s", ErrNotFound, ref)
	}
	norm, err := Normalize(ref)
	if err != nil {
		return Image{}, err
	}
	for _, img := range imgs {
		if slices.Contains(img.RepoTags, norm) || slices.Contains(img.RepoDigests, norm) {
			return img, nil
		}
	}
	return Image{}, fmt.Errorf("%w: %s", ErrNotFound, ref)
}

// Remove deletes an image and every name it has, then the blobs and the
// unpacked root filesystem nothing uses any more. Removing an image the
// store does not hold returns ErrNotFound.
func (s *Store) Remove(ref string) error {
	unlock, err := flock(s.path("lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	imgs, err := s.List()
	if err != nil {
		return err
	}
	img, err := find(imgs, ref)
	if err != nil {
		return err
	}
	idx, err := s.readIndex()
	if err != nil {
		return err
	}
	kept := idx.Manifests[:0]
	for _, d := range idx.Manifests {
		if d.Digest.String() == img.Manifest {
			continue
		}
		if other, err := s.describe(d); err == nil && other.ID == img.ID {
			continue
		}
		kept = append(kept, d)
	}
	idx.Manifests = kept
	if err := s.writeIndex(idx); err != nil {
		return err
	}
	s.log.Info("removed image", "id", img.ID, "tags", img.RepoTags)
	return s.unsafeCollect(idx)
}

// describe reads the manifest and config an index entry points at.
func (s *Store) describe(d v1.Descriptor) (Image, error) {
	img, err := s.readImage(d)
	if err != nil {
		return Image{}, err
	}
	img.Config = *img.Config.DeepCopy()
	if n := d.Annotations[annotationName]; n != "" {
		img.RepoTags = append(img.RepoTags, n)
	}
	if rd := d.Annotations[annotationRepoDigest]; rd != "" {
		img.RepoDigests = append(img.RepoDigests, rd)
	}
	return img, nil
}

// readImage returns the image of a manifest, without its names.
func (s *Store) readImage(d v1.Descriptor) (Image, error) {
	if img, ok := s.described.Load(d.Digest.String()); ok {
		return img.(Image), nil
	}
	raw, err := os.ReadFile(s.blobPath(d.Digest.String()))
	if err != nil {
		return Image{}, fmt.Errorf("images: manifest %s: %w", d.Digest, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return Image{}, fmt.Errorf("images: manifest %s: %w", d.Digest, err)
	}
	cfgRaw, err := os.ReadFile(s.blobPath(m.Config.Digest.String()))
	if err != nil {
		return Image{}, fmt.Errorf("images: config of %s: %w", d.Digest, err)
	}
	cf, err := v1.ParseConfigFile(bytes.NewReader(cfgRaw))
	if err != nil {
		return Image{}, fmt.Errorf("images: config of %s: %w", d.Digest, err)
	}
	img := Image{ID: m.Config.Digest.String(), Manifest: d.Digest.String(), Size: m.Config.Size, Config: cf.Config}
	for _, l := range m.Layers {
		img.Size += l.Size
	}
	s.described.Store(d.Digest.String(), img)
	return img, nil
}

// readIndex reads index.json. Writers replace it atomically, so readers
// need no lock.
func (s *Store) readIndex() (*v1.IndexManifest, error) {
	raw, err := os.ReadFile(s.path("index.json"))
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("images: index.json: %w", err)
	}
	return idx, nil
}

func (s *Store) writeIndex(idx *v1.IndexManifest) error {
	raw, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	return atomicfile.Write(s.path("index.json"), raw, 0o600, true)
}

// commit moves the blobs of a temporary OCI layout into the store and
// adds entries to the index, replacing entries of the same name. The
// caller holds no lock; commit takes it.
func (s *Store) commit(tmpLayout string, entries []v1.Descriptor) error {
	unlock, err := flock(s.path("lock"), true)
	if err != nil {
		return err
	}
	defer unlock()
	blobs, err := os.ReadDir(filepath.Join(tmpLayout, "blobs", "sha256"))
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	for _, b := range blobs {
		dst := filepath.Join(s.blobDir(), b.Name())
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		src := filepath.Join(tmpLayout, "blobs", "sha256", b.Name())
		if err := verifyBlob(src, b.Name()); err != nil {
			return err
		}
		if err := os.Rename(src, dst); err != nil {
			return fmt.Errorf("images: %w", err)
		}
	}
	idx, err := s.readIndex()
	if err != nil {
		return err
	}
	for _, e := range entries {
		idx.Manifests = slices.DeleteFunc(idx.Manifests, func(d v1.Descriptor) bool { return sameEntry(d, e) })
		idx.Manifests = append(idx.Manifests, e)
	}
	if err := s.writeIndex(idx); err != nil {
		return err
	}
	return s.unsafeCollect(idx)
}

// sameEntry reports whether a new index entry replaces an old one: same
// name, or, for unnamed entries, same repository digest or manifest.
func sameEntry(old, e v1.Descriptor) bool {
	if n := e.Annotations[annotationName]; n != "" {
		return old.Annotations[annotationName] == n
	}
	if old.Annotations[annotationName] != "" {
		return false
	}
	if rd := e.Annotations[annotationRepoDigest]; rd != "" {
		return old.Annotations[annotationRepoDigest] == rd
	}
	return old.Digest == e.Digest && old.Annotations[annotationRepoDigest] == ""
}

// unsafeCollect deletes the blobs no index entry references and the
// unpacked root filesystems of images gone from the index that no
// container leases. The caller holds the store lock.
func (s *Store) unsafeCollect(idx *v1.IndexManifest) error {
	keep := map[string]bool{}
	ids := map[string]bool{}
	for _, d := range idx.Manifests {
		keep[d.Digest.Hex] = true
		raw, err := os.ReadFile(s.blobPath(d.Digest.String()))
		if err != nil {
			continue
		}
		m, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			continue
		}
		keep[m.Config.Digest.Hex] = true
		ids[m.Config.Digest.Hex] = true
		for _, l := range m.Layers {
			keep[l.Digest.Hex] = true
		}
	}
	blobs, err := os.ReadDir(s.blobDir())
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	for _, b := range blobs {
		if !keep[b.Name()] {
			if err := os.Remove(filepath.Join(s.blobDir(), b.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("images: %w", err)
			}
		}
	}
	dirs, err := os.ReadDir(s.path("rootfs"))
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	for _, d := range dirs {
		id := d.Name()
		if !d.IsDir() || strings.Contains(id, ".") || ids[id] {
			continue
		}
		if err := s.removeRootfs(id); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleTemp deletes temporary directories left by crashed imports.
func (s *Store) removeStaleTemp() {
	entries, err := os.ReadDir(s.path("tmp"))
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && time.Since(info.ModTime()) > staleTemp {
			os.RemoveAll(s.path("tmp", e.Name()))
		}
	}
}

// verifyBlob checks that the file at path has the SHA-256 digest hexSum.
func verifyBlob(path, hexSum string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("images: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != hexSum {
		return fmt.Errorf("images: blob sha256:%s is corrupt (its content hashes to sha256:%s)", hexSum, got)
	}
	return nil
}
