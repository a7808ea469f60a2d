package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Import loads every image of a tar file, either an OCI image layout (as
// written by `docker save` since Docker 25, buildx or skopeo) or a
// docker-archive (`docker save` before Docker 25), and returns them.
// Images are named by the layout's io.containerd.image.name annotation
// (or a reference-like org.opencontainers.image.ref.name), or by the
// archive's RepoTags; unnamed images are kept by ID.
func (s *Store) Import(ctx context.Context, tarPath string) ([]Image, error) {
	kind, err := archiveKind(tarPath)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(s.path("tmp"), "import-")
	if err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	defer os.RemoveAll(tmp)
	var entries []v1.Descriptor
	switch kind {
	case "oci":
		entries, err = s.stageOCI(ctx, tarPath, tmp)
	default:
		entries, err = s.stageDocker(ctx, tarPath, tmp)
	}
	if err != nil {
		return nil, fmt.Errorf("images: importing %s: %w", tarPath, err)
	}
	if err := s.commit(tmp, entries); err != nil {
		return nil, err
	}
	var out []Image
	for _, e := range entries {
		img, err := s.describe(e)
		if err != nil {
			return nil, err
		}
		s.log.Info("imported image", "id", img.ID, "tags", img.RepoTags, "from", tarPath)
		out = append(out, img)
	}
	if err := s.ensureUnpacked(ctx, out); err != nil {
		return nil, fmt.Errorf("images: importing %s: %w", tarPath, err)
	}
	return out, nil
}

// archiveKind tells an OCI layout tar ("oci") from a docker-archive
// ("docker"). A tar with both (Docker 25 and later) is read as OCI,
// whose index carries full image names.
func archiveKind(tarPath string) (string, error) {
	f, err := os.Open(tarPath)
	if err != nil {
		return "", fmt.Errorf("images: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var index, layoutFile, manifest bool
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("images: reading %s: %w", tarPath, err)
		}
		switch path.Clean(hdr.Name) {
		case "index.json":
			index = true
		case "oci-layout":
			layoutFile = true
		case "manifest.json":
			manifest = true
		}
	}
	switch {
	case index && layoutFile:
		return "oci", nil
	case manifest:
		return "docker", nil
	}
	return "", fmt.Errorf("images: %s is neither an OCI layout tar (index.json, oci-layout) nor a docker-archive (manifest.json)", tarPath)
}

// stageOCI extracts an OCI layout tar into dir and returns the index
// entries of its images for this platform.
func (s *Store) stageOCI(ctx context.Context, tarPath, dir string) ([]v1.Descriptor, error) {
	if err := extractLayout(ctx, tarPath, dir); err != nil {
		return nil, err
	}
	p := layout.Path(dir)
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var entries []v1.Descriptor
	for _, d := range im.Manifests {
		target, err := s.platformManifest(p, d)
		if err != nil {
			return nil, err
		}
		e := v1.Descriptor{MediaType: target.MediaType, Size: target.Size, Digest: target.Digest}
		if n := layoutName(d.Annotations); n != "" {
			norm, err := Normalize(n)
			if err != nil {
				return nil, err
			}
			e.Annotations = nameAnnotations(norm)
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, errors.New("the layout holds no image")
	}
	return entries, nil
}

// platformManifest follows image indexes down to the image manifest for
// this machine's platform.
func (s *Store) platformManifest(p layout.Path, d v1.Descriptor) (v1.Descriptor, error) {
	for depth := 0; d.MediaType.IsIndex(); depth++ {
		if depth > 4 {
			return v1.Descriptor{}, fmt.Errorf("image index %s nests too deeply", d.Digest)
		}
		raw, err := p.Bytes(d.Digest)
		if err != nil {
			return v1.Descriptor{}, err
		}
		child, err := v1.ParseIndexManifest(bytes.NewReader(raw))
		if err != nil {
			return v1.Descriptor{}, err
		}
		found := false
		for _, c := range child.Manifests {
			if c.MediaType.IsIndex() || c.Platform == nil || c.Platform.Satisfies(s.platform) {
				d, found = c, true
				break
			}
		}
		if !found {
			return v1.Descriptor{}, fmt.Errorf("image index %s has no image for %s/%s", d.Digest, s.platform.OS, s.platform.Architecture)
		}
	}
	if !d.MediaType.IsImage() {
		return v1.Descriptor{}, fmt.Errorf("descriptor %s has media type %s, not an image", d.Digest, d.MediaType)
	}
	return d, nil
}

// layoutName returns the image name of an OCI layout index entry. The
// OCI ref.name annotation is often a bare tag, which names no image;
// only a value with a repository in it is taken.
func layoutName(anns map[string]string) string {
	if n := anns[annotationName]; n != "" {
		return n
	}
	if n := anns[annotationRefName]; strings.ContainsAny(n, "/:@") {
		return n
	}
	return ""
}

func nameAnnotations(norm string) map[string]string {
	anns := map[string]string{annotationName: norm}
	if t, err := name.NewTag(norm); err == nil && hasTag(norm) {
		anns[annotationRefName] = t.TagStr()
	}
	return anns
}

// extractLayout extracts the regular files and directories of a tar
// into dir, refusing names that would land outside it.
func extractLayout(ctx context.Context, tarPath, dir string) error {
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		rel := path.Clean("/" + hdr.Name)
		if rel == "/" {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				return err
			}
			out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// stageDocker converts the images of a docker-archive into an OCI
// layout in dir and returns their index entries.
func (s *Store) stageDocker(ctx context.Context, tarPath, dir string) ([]v1.Descriptor, error) {
	opener := func() (io.ReadCloser, error) { return os.Open(tarPath) }
	manifest, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	var entries []v1.Descriptor
	for _, m := range manifest {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var tag *name.Tag
		if len(m.RepoTags) > 0 {
			t, err := name.NewTag(m.RepoTags[0])
			if err != nil {
				return nil, err
			}
			tag = &t
		} else if len(manifest) > 1 {
			return nil, errors.New("the archive holds several images and one has no tag")
		}
		img, err := tarball.Image(opener, tag)
		if err != nil {
			return nil, err
		}
		if err := p.WriteImage(img); err != nil {
			return nil, err
		}
		d, err := imageDescriptor(img)
		if err != nil {
			return nil, err
		}
		if len(m.RepoTags) == 0 {
			entries = append(entries, d)
		}
		for _, t := range m.RepoTags {
			norm, err := Normalize(t)
			if err != nil {
				return nil, err
			}
			e := d
			e.Annotations = nameAnnotations(norm)
			entries = append(entries, e)
		}
	}
	return entries, nil
}

// imageDescriptor returns the descriptor of an image's manifest.
func imageDescriptor(img v1.Image) (v1.Descriptor, error) {
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Digest: digest, Size: size}, nil
}
