package devcluster

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"cairn/internal/devcluster/demoapp"
	"cairn/node/images"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DemoImage names the demo image in the agents' image stores. Its tag
// is not "latest", so pods using it default to imagePullPolicy
// IfNotPresent rather than trying a registry.
const DemoImage = "cairn.local/demo:v1"

// demoBinaryPath is where the image holds the cairn binary.
const demoBinaryPath = "/cairn"

// demoEpoch is the modification time of every file in the image, so
// that one binary always gives one image ID.
func demoEpoch() time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) }

// BuildDemoImage returns the demo image for the binary bin: its root
// filesystem holds bin as /cairn with the loader and libraries it needs,
// and it runs `/cairn __demo-http serve`, the demo HTTP server. layerPath
// is where the compressed layer is written; it must stay until the image
// has been written out.
func BuildDemoImage(bin, layerPath string) (v1.Image, error) {
	files, err := binaryFiles(bin)
	if err != nil {
		return nil, err
	}
	if err := writeLayer(layerPath, files); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: demoEpoch()}
	env := []string{"PATH=/"}
	if lp := libraryPath(files); lp != "" {
		env = append(env, "LD_LIBRARY_PATH="+lp)
	}
	cf.Config = v1.Config{
		Entrypoint:   []string{demoBinaryPath, "__demo-http"},
		Cmd:          []string{"serve"},
		Env:          env,
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{strconv.Itoa(demoapp.DefaultPort) + "/tcp": {}},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("devcluster: %w", err)
	}
	return img, nil
}

// writeLayer writes the gzipped tar of the image's one layer: /etc and
// /tmp, and the files with their parent directories.
func writeLayer(dst string, files []imageFile) (err error) {
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("devcluster: %w", cerr)
		}
	}()
	gz, err := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	var addDir func(d string, mode int64) error
	addDir = func(d string, mode int64) error {
		if d == "" || d == "." || dirs[d] {
			return nil
		}
		if err := addDir(filepath.Dir(d), 0o755); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: demoEpoch()})
	}
	if err := addDir("etc", 0o755); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	if err := addDir("tmp", 0o1777); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	for _, f := range files {
		name := strings.TrimPrefix(filepath.Clean(f.Path), "/")
		if err := addDir(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("devcluster: %w", err)
		}
		if err := addFile(tw, name, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	return nil
}

func addFile(tw *tar.Writer, name string, f imageFile) error {
	src, err := os.Open(f.Source)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(f.Mode.Perm()), Size: st.Size(), ModTime: demoEpoch()}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("devcluster: %s: %w", name, err)
	}
	if _, err := io.CopyN(tw, src, st.Size()); err != nil {
		return fmt.Errorf("devcluster: %s: %w", name, err)
	}
	return nil
}

// demoImageArchive returns a docker-archive of the demo image for bin
// and the image's ID, building it only when bin changed since the last
// build in dir.
func demoImageArchive(bin, dir string) (tarPath, id string, err error) {
	// cairn-demo, built beside cairn, answers `__demo-http` too and
	// starts in milliseconds instead of a fifth of a second: a hundred
	// demo pods on a small node start that much sooner.
	if demo := filepath.Join(filepath.Dir(bin), "cairn-demo"); isExecutable(demo) {
		bin = demo
	}
	sum, err := fileSHA256(bin)
	if err != nil {
		return "", "", err
	}
	base := filepath.Join(dir, "demo-"+sum[:16])
	tarPath = base + ".tar"
	if raw, err := os.ReadFile(base + ".id"); err == nil {
		if _, err := os.Stat(tarPath); err == nil {
			return tarPath, strings.TrimSpace(string(raw)), nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("devcluster: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(dir, "demo-*"))
	for _, p := range old {
		os.Remove(p)
	}
	layerPath := base + ".layer.tar.gz"
	defer os.Remove(layerPath)
	img, err := BuildDemoImage(bin, layerPath)
	if err != nil {
		return "", "", err
	}
	tag, err := name.NewTag(DemoImage)
	if err != nil {
		return "", "", fmt.Errorf("devcluster: %w", err)
	}
	if err := tarball.WriteToFile(tarPath+".tmp", tag, img); err != nil {
		return "", "", fmt.Errorf("devcluster: writing the demo image: %w", err)
	}
	if err := os.Rename(tarPath+".tmp", tarPath); err != nil {
		return "", "", fmt.Errorf("devcluster: %w", err)
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return "", "", fmt.Errorf("devcluster: %w", err)
	}
	id = cfgName.String()
	if err := os.WriteFile(base+".id", []byte(id+"\n"), 0o600); err != nil {
		return "", "", fmt.Errorf("devcluster: %w", err)
	}
	return tarPath, id, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("devcluster: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("devcluster: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// importDemoImage puts the demo image into the image store of the agent
// data directory dataDir, unless the store has it already.
func importDemoImage(ctx context.Context, tarPath, id, dataDir string) error {
	store, err := images.Open(images.Config{Dir: images.Dir(dataDir)})
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	if img, err := store.Get(DemoImage); err == nil && img.ID == id {
		return nil
	} else if err != nil && !errors.Is(err, images.ErrNotFound) {
		return fmt.Errorf("devcluster: %w", err)
	}
	if _, err := store.Import(ctx, tarPath); err != nil {
		return fmt.Errorf("devcluster: importing the demo image into %s: %w", dataDir, err)
	}
	return nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
