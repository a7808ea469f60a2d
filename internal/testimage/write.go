package testimage

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Annotations of an OCI layout's index entries that name an image: the
// full reference (as containerd and Docker write it) and the tag alone
// (as the OCI image spec defines it).
const (
	AnnotationImageName = "io.containerd.image.name"
	AnnotationRefName   = "org.opencontainers.image.ref.name"
)

// WriteOCILayoutTar writes images, keyed by reference, as a tar of an OCI
// image layout (what `docker save` writes since Docker 25, and what
// `ctr images import` and `cairn image import` read).
func WriteOCILayoutTar(tarPath string, images map[string]v1.Image) error {
	dir, err := os.MkdirTemp(filepath.Dir(tarPath), ".oci-layout-")
	if err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	for _, ref := range sortedKeys(images) {
		tag, err := name.NewTag(ref)
		if err != nil {
			return fmt.Errorf("testimage: %w", err)
		}
		anns := map[string]string{AnnotationImageName: ref, AnnotationRefName: tag.TagStr()}
		if err := p.AppendImage(images[ref], layout.WithAnnotations(anns)); err != nil {
			return fmt.Errorf("testimage: %w", err)
		}
	}
	return tarDir(dir, tarPath)
}

// WriteDockerArchive writes img tagged ref in the format of `docker save`
// before Docker 25 (manifest.json and layer tars).
func WriteDockerArchive(tarPath, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	return nil
}

// tarDir writes the regular files and directories under dir to tarPath.
func tarDir(dir, tarPath string) error {
	f, err := os.Create(tarPath)
	if err != nil {
		return fmt.Errorf("testimage: %w", err)
	}
	tw := tar.NewWriter(f)
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		hdr.ModTime, hdr.Uname, hdr.Gname, hdr.Uid, hdr.Gid = epoch(), "", "", 0, 0
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	closeErr := tw.Close()
	if err := f.Close(); closeErr == nil {
		closeErr = err
	}
	if walkErr != nil {
		return fmt.Errorf("testimage: %w", walkErr)
	}
	if closeErr != nil {
		return fmt.Errorf("testimage: %w", closeErr)
	}
	return nil
}
