package testimage

import (
	"archive/tar"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// untar extracts the regular files and directories of an archive.
func untar(t *testing.T, tarPath, dir string) {
	t.Helper()
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, hdr.Name)
		if hdr.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// flatFiles returns the path → tar header of an image's flattened filesystem.
func flatFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]*tar.Header{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.Trim(hdr.Name, "/")] = hdr
	}
}

func TestBusyboxArchivesCarryTheImage(t *testing.T) {
	want := BusyboxImage(t)
	wantDigest, err := want.Digest()
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]func(t *testing.T) (v1.Image, string){
		"oci layout": func(t *testing.T) (v1.Image, string) {
			tarPath, ref := Busybox(t)
			dir := t.TempDir()
			untar(t, tarPath, dir)
			idx, err := layout.ImageIndexFromPath(dir)
			if err != nil {
				t.Fatal(err)
			}
			m, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Manifests) != 1 || m.Manifests[0].Annotations[AnnotationImageName] != ref ||
				m.Manifests[0].Annotations[AnnotationRefName] != "latest" {
				t.Fatalf("index manifests = %+v, want one named %s", m.Manifests, ref)
			}
			img, err := idx.Image(m.Manifests[0].Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img, ref
		},
		"docker archive": func(t *testing.T) (v1.Image, string) {
			tarPath, ref := BusyboxDockerArchive(t)
			tag, err := name.NewTag(ref)
			if err != nil {
				t.Fatal(err)
			}
			img, err := tarball.ImageFromPath(tarPath, &tag)
			if err != nil {
				t.Fatal(err)
			}
			return img, ref
		},
	}
	for format, open := range read {
		t.Run(format, func(t *testing.T) {
			img, _ := open(t)
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(cfg.Config.Cmd) != "[sh]" || cfg.OS != "linux" {
				t.Errorf("config = %+v, want cmd [sh] on linux", cfg.Config)
			}
			if format == "oci layout" {
				if d, _ := img.Digest(); d != wantDigest {
					t.Errorf("digest = %s, want %s (builds must be reproducible)", d, wantDigest)
				}
			}
			files := flatFiles(t, img)
			if files["bin/sh"] == nil || files["bin/sh"].Linkname != "/bin/busybox" {
				t.Errorf("bin/sh = %+v, want a symlink to /bin/busybox", files["bin/sh"])
			}
			if files["bin/busybox"] == nil || files["bin/busybox"].Mode&0o111 == 0 {
				t.Errorf("bin/busybox = %+v, want an executable", files["bin/busybox"])
			}
			if files["tmp"] == nil || files["tmp"].Mode&0o1000 == 0 {
				t.Errorf("tmp = %+v, want a sticky directory", files["tmp"])
			}
		})
	}
}

func TestHTTPServerBinaryServesAndFetches(t *testing.T) {
	bin := TestHTTPBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s has an ELF interpreter: it must be static to run in any image", bin)
		}
	}
	f.Close()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv := exec.CommandContext(ctx, bin, "serve", "-listen", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()

	var out []byte
	for ctx.Err() == nil {
		out, err = exec.CommandContext(ctx, bin, "get", "-timeout", "1s", "http://"+addr+"/healthz").Output()
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("testhttp get /healthz = %q, %v; want ok", out, err)
	}
	if err := exec.CommandContext(ctx, bin, "get", "http://"+addr+"/exit/notanumber").Run(); err == nil {
		t.Error("testhttp get of a 400 answer succeeded, want exit status 1")
	}
}

func TestHTTPServerImageRunsTheServer(t *testing.T) {
	img := HTTPServerImage(t)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cfg.Config.Entrypoint, cfg.Config.Cmd); got != "[/bin/testhttp] [serve]" {
		t.Errorf("entrypoint and cmd = %s, want [/bin/testhttp] [serve]", got)
	}
	files := flatFiles(t, img)
	for _, p := range []string{"bin/testhttp", "bin/busybox", "bin/sh"} {
		if files[p] == nil {
			t.Errorf("image lacks %s", p)
		}
	}
}
