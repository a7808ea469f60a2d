package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/internal/testimage"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Config{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNormalizeFollowsKubernetes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"busybox", "docker.io/library/busybox:latest"},
		{"busybox:1.36", "docker.io/library/busybox:1.36"},
		{"library/busybox", "docker.io/library/busybox:latest"},
		{"example.com:5000/team/app", "example.com:5000/team/app:latest"},
		{"127.0.0.1:5000/app:v1", "127.0.0.1:5000/app:v1"},
		{"busybox@sha256:" + strings.Repeat("a", 64), "docker.io/library/busybox@sha256:" + strings.Repeat("a", 64)},
		{"busybox:1.36@sha256:" + strings.Repeat("a", 64), "docker.io/library/busybox@sha256:" + strings.Repeat("a", 64)},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Normalize(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := Normalize("no spaces allowed"); err == nil {
		t.Error("Normalize accepted an invalid reference")
	}
}

func TestImportReadsOCILayoutAndDockerArchives(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(testing.TB) (string, string)
	}{
		{"oci layout", testimage.Busybox},
		{"docker archive", testimage.BusyboxDockerArchive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tarPath, ref := tc.build(t)
			s := openStore(t, t.TempDir())
			imgs, err := s.Import(context.Background(), tarPath)
			if err != nil {
				t.Fatal(err)
			}
			if len(imgs) != 1 || !slices.Equal(imgs[0].RepoTags, []string{ref}) {
				t.Fatalf("imported %+v, want one image tagged %s", imgs, ref)
			}
			for _, lookup := range []string{ref, imgs[0].ID, imgs[0].Manifest} {
				got, err := s.Get(lookup)
				if err != nil || got.ID != imgs[0].ID {
					t.Errorf("Get(%s) = %s, %v; want %s", lookup, got.ID, err, imgs[0].ID)
				}
			}
			if _, err := s.Get("cairn.test/other:latest"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get of a missing image = %v, want ErrNotFound", err)
			}
			// Import unpacks, so that the first container does not wait.
			unpacked := filepath.Join(s.dir, "rootfs", strings.TrimPrefix(imgs[0].ID, "sha256:"))
			if _, err := os.Stat(filepath.Join(unpacked, "bin", "busybox")); err != nil {
				t.Errorf("the image is not unpacked by Import: %v", err)
			}
			_, root, err := s.Unpack(context.Background(), ref, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if root != unpacked {
				t.Errorf("Unpack gave %s, want the tree Import unpacked, %s", root, unpacked)
			}
			if link, err := os.Readlink(filepath.Join(root, "bin", "sh")); err != nil || link != "/bin/busybox" {
				t.Errorf("bin/sh -> %q, %v; want /bin/busybox", link, err)
			}
			if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&fs.ModeSticky == 0 {
				t.Errorf("tmp = %v, %v; want a sticky directory", fi.Mode(), err)
			}
		})
	}
}

func TestImportReplacesATagAndKeepsOtherImages(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	img := func(content string) v1.Image {
		l, err := testimage.Layer([]testimage.File{{Path: "f", Data: []byte(content)}})
		if err != nil {
			t.Fatal(err)
		}
		i, err := testimage.Image(v1.Config{}, l)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	write := func(images map[string]v1.Image) string {
		p := filepath.Join(t.TempDir(), "images.tar")
		if err := testimage.WriteOCILayoutTar(p, images); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := s.Import(context.Background(), write(map[string]v1.Image{"cairn.test/a:v1": img("a1"), "cairn.test/b:v1": img("b1")})); err != nil {
		t.Fatal(err)
	}
	old, _ := s.Get("cairn.test/a:v1")
	if _, err := s.Import(context.Background(), write(map[string]v1.Image{"cairn.test/a:v1": img("a2")})); err != nil {
		t.Fatal(err)
	}
	imgs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 {
		t.Fatalf("store holds %d images, want 2 (a:v1 moved, b:v1 kept): %+v", len(imgs), imgs)
	}
	if now, _ := s.Get("cairn.test/a:v1"); now.ID == old.ID {
		t.Error("a:v1 still names the old image after a new import")
	}
	if _, err := os.Stat(s.blobPath(old.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config blob of the untagged image is still on disk: %v", err)
	}
}

func TestConcurrentImportsFromTwoProcessesKeepBoth(t *testing.T) {
	dir := t.TempDir()
	var tars []string
	for _, ref := range []string{"cairn.test/one:latest", "cairn.test/two:latest"} {
		l, err := testimage.Layer([]testimage.File{{Path: "name", Data: []byte(ref)}})
		if err != nil {
			t.Fatal(err)
		}
		img, err := testimage.Image(v1.Config{}, l)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "image.tar")
		if err := testimage.WriteOCILayoutTar(p, map[string]v1.Image{ref: img}); err != nil {
			t.Fatal(err)
		}
		tars = append(tars, p)
	}
	// Two stores over one directory stand for the agent and a
	// `cairn image import` running at the same time.
	var wg sync.WaitGroup
	errs := make([]error, len(tars))
	for i, p := range tars {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = openStore(t, dir).Import(context.Background(), p)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	imgs, err := openStore(t, dir).List()
	if err != nil || len(imgs) != 2 {
		t.Fatalf("List = %+v, %v; want both images", imgs, err)
	}
}

func TestUnpackAppliesWhiteoutsAndStaysInsideRoot(t *testing.T) {
	layers := [][]testimage.File{
		{
			{Path: "a/keep", Data: []byte("keep")},
			{Path: "a/gone", Data: []byte("gone")},
			{Path: "b/old", Data: []byte("old")},
			{Path: "bin/tool", Mode: fs.ModeSetuid | 0o755, Data: []byte("#!/bin/sh\n")},
		},
		{
			{Path: "a/.wh.gone"},
			{Path: "b/new", Data: []byte("new")},
			{Path: "b/.wh..wh..opq"},
			{Path: "a/keep-link", Hardlink: true, Link: "a/keep"},
		},
	}
	// Layer adds parent directory entries, which would replace the
	// symlinks; this one is written by hand, as a hostile image would be.
	escape := rawLayer(t, []*tar.Header{
		{Typeflag: tar.TypeSymlink, Name: "escape", Linkname: "/"},
		{Typeflag: tar.TypeSymlink, Name: "up", Linkname: "../../../.."},
		{Typeflag: tar.TypeReg, Name: "escape/pwned", Size: 6, Mode: 0o644},
		{Typeflag: tar.TypeReg, Name: "up/pwned-too", Size: 6, Mode: 0o644},
	}, "inside")
	ls := []v1.Layer{escape}
	for _, files := range layers {
		l, err := testimage.Layer(files)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	img, err := testimage.Image(v1.Config{Cmd: []string{"/bin/tool"}}, ls...)
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "img.tar")
	if err := testimage.WriteOCILayoutTar(tarPath, map[string]v1.Image{"cairn.test/layers:v1": img}); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, t.TempDir())
	if _, err := s.Import(context.Background(), tarPath); err != nil {
		t.Fatal(err)
	}
	_, root, err := s.Unpack(context.Background(), "cairn.test/layers:v1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // "" means absent
	}{
		{"a/keep", "keep"},
		{"a/gone", ""},
		{"b/old", ""},
		{"b/new", "new"},
		{"a/keep-link", "keep"},
		{"pwned", "inside"},
		{"pwned-too", "inside"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, tc.path))
			if tc.want == "" {
				if !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists (%q, %v), want it whited out", tc.path, data, err)
				}
				return
			}
			if err != nil || string(data) != tc.want {
				t.Errorf("%s = %q, %v; want %q", tc.path, data, err, tc.want)
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(root, "bin/tool")); err != nil || fi.Mode()&fs.ModeSetuid == 0 {
		t.Errorf("bin/tool mode = %v, %v; want setuid kept", fi.Mode(), err)
	}
	if _, err := os.Stat("/pwned"); err == nil {
		t.Fatal("a layer wrote /pwned on the host through a symlink")
	}
}

// rawLayer writes headers as they are, each regular file holding data.
func rawLayer(t *testing.T, hdrs []*tar.Header, data string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(data))
		}
	}
	tw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestUnpackAddsMissingMountPointsOnly(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name  string
		hdrs  []*tar.Header
		check map[string]string // path → "dir", "empty", "link", "kept" or "" (absent)
	}{
		{"bare image", []*tar.Header{{Typeflag: tar.TypeReg, Name: "app", Size: 6, Mode: 0o755}},
			map[string]string{"proc": "dir", "dev": "dir", "sys": "dir", "etc/hosts": "empty", "etc/hostname": "empty", "etc/resolv.conf": "empty"}},
		{"image with its own files", []*tar.Header{
			{Typeflag: tar.TypeDir, Name: "etc", Mode: 0o755},
			{Typeflag: tar.TypeReg, Name: "etc/hosts", Size: 6, Mode: 0o644},
			{Typeflag: tar.TypeSymlink, Name: "etc/resolv.conf", Linkname: "/run/resolv.conf"},
		}, map[string]string{"etc/hosts": "kept", "etc/resolv.conf": "link", "etc/hostname": "empty"}},
		// An /etc that is not a directory is left to the runtime, which
		// resolves it inside the container; nothing is written through it.
		{"etc a symlink", []*tar.Header{{Typeflag: tar.TypeSymlink, Name: "etc", Linkname: outside}},
			map[string]string{"etc": "link", "proc": "dir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if entries, _ := os.ReadDir(outside); len(entries) > 0 {
					t.Errorf("unpack wrote %d entries through a symlink out of the tree", len(entries))
				}
			}()
			img, err := testimage.Image(v1.Config{}, rawLayer(t, tc.hdrs, "inside"))
			if err != nil {
				t.Fatal(err)
			}
			tarPath := filepath.Join(t.TempDir(), "img.tar")
			if err := testimage.WriteOCILayoutTar(tarPath, map[string]v1.Image{"cairn.test/mp:v1": img}); err != nil {
				t.Fatal(err)
			}
			s := openStore(t, t.TempDir())
			if _, err := s.Import(context.Background(), tarPath); err != nil {
				t.Fatal(err)
			}
			_, root, err := s.Unpack(context.Background(), "cairn.test/mp:v1", "c1")
			if err != nil {
				t.Fatal(err)
			}
			for rel, want := range tc.check {
				fi, err := os.Lstat(filepath.Join(root, rel))
				got := ""
				switch {
				case err != nil:
				case fi.Mode()&fs.ModeSymlink != 0:
					got = "link"
				case fi.IsDir():
					got = "dir"
				case fi.Size() == 0:
					got = "empty"
				default:
					got = "kept"
				}
				if got != want {
					t.Errorf("%s is %q, want %q", rel, got, want)
				}
			}
		})
	}
}

func TestRemoveKeepsALeasedRootfsUntilReleased(t *testing.T) {
	tarPath, ref := testimage.Busybox(t)
	s := openStore(t, t.TempDir())
	if _, err := s.Import(context.Background(), tarPath); err != nil {
		t.Fatal(err)
	}
	img, root, err := s.Unpack(context.Background(), ref, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ref); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ref); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(root, "bin", "busybox")); err != nil {
		t.Fatalf("rootfs of a leased image vanished on Remove: %v", err)
	}
	if err := s.Release(img.ID, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rootfs still on disk after its last lease went: %v", err)
	}
	if blobs, _ := os.ReadDir(s.blobDir()); len(blobs) != 0 {
		t.Errorf("%d blobs left after removing the only image", len(blobs))
	}
}

func TestPullFromRegistryOnLoopback(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := host + "/test/busybox:v1"
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img := testimage.BusyboxImage(t)
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()

	s := openStore(t, t.TempDir())
	got, err := s.Pull(context.Background(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantDigest := host + "/test/busybox@" + digest.String()
	if _, err := os.Stat(filepath.Join(s.dir, "rootfs", strings.TrimPrefix(got.ID, "sha256:"), "bin", "busybox")); err != nil {
		t.Errorf("the image is not unpacked by Pull: %v", err)
	}
	if !slices.Equal(got.RepoTags, []string{ref}) || !slices.Equal(got.RepoDigests, []string{wantDigest}) {
		t.Errorf("pulled %+v, want tag %s and digest %s", got, ref, wantDigest)
	}
	byDigest, err := s.Pull(context.Background(), wantDigest, &Auth{})
	if err != nil {
		t.Fatal(err)
	}
	if byDigest.ID != got.ID {
		t.Errorf("pull by digest gave image %s, want %s", byDigest.ID, got.ID)
	}
	if imgs, _ := s.List(); len(imgs) != 1 {
		t.Errorf("store lists %d images after two pulls of one image, want 1", len(imgs))
	}
	if _, err := s.Pull(context.Background(), host+"/test/missing:v1", nil); err == nil {
		t.Error("pull of a missing image succeeded")
	}
}

func TestGetReturnsACopyCallersMayChange(t *testing.T) {
	tarPath, ref := testimage.Busybox(t)
	s := openStore(t, t.TempDir())
	if _, err := s.Import(context.Background(), tarPath); err != nil {
		t.Fatal(err)
	}
	first, err := s.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(first.Config.Env)
	first.Config.Env = append(first.Config.Env[:0], "CHANGED=1")
	first.RepoTags[0] = "changed"
	again, err := s.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Config.Env, want) || !slices.Equal(again.RepoTags, []string{ref}) {
		t.Errorf("a caller's change leaked into the store: env %q tags %q", again.Config.Env, again.RepoTags)
	}
}

// TestListSeesEveryChangeOfTheIndex checks List's cache: another
// store on the same directory (another process, as `cairn image
// import` is) imports and removes images, and each List sees it.
func TestListSeesEveryChangeOfTheIndex(t *testing.T) {
	defer func(d time.Duration) { indexSettled = d }(indexSettled)
	indexSettled = 0 // cache every index, however new
	dir := t.TempDir()
	s, other := openStore(t, dir), openStore(t, dir)
	importOne := func(ref string) {
		l, err := testimage.Layer([]testimage.File{{Path: "name", Data: []byte(ref)}})
		if err != nil {
			t.Fatal(err)
		}
		img, err := testimage.Image(v1.Config{Env: []string{"A=1"}}, l)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "image.tar")
		if err := testimage.WriteOCILayoutTar(p, map[string]v1.Image{ref: img}); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Import(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	tags := func() []string {
		t.Helper()
		imgs, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, img := range imgs {
			out = append(out, img.RepoTags...)
		}
		slices.Sort(out)
		return out
	}
	importOne("cairn.test/one:v1")
	if got := tags(); !slices.Equal(got, []string{"cairn.test/one:v1"}) {
		t.Fatalf("after one import: %q", got)
	}
	importOne("cairn.test/two:v1")
	if got := tags(); !slices.Equal(got, []string{"cairn.test/one:v1", "cairn.test/two:v1"}) {
		t.Fatalf("after a second import: %q", got)
	}
	// What a caller changes stays its own.
	imgs, _ := s.List()
	imgs[0].RepoTags[0] = "changed"
	imgs[0].Config.Env[0] = "CHANGED=1"
	if again, _ := s.List(); again[0].RepoTags[0] == "changed" || again[0].Config.Env[0] != "A=1" {
		t.Errorf("a caller's change leaked into the cache: %+v", again[0])
	}
	if err := other.Remove("cairn.test/one:v1"); err != nil {
		t.Fatal(err)
	}
	if got := tags(); !slices.Equal(got, []string{"cairn.test/two:v1"}) {
		t.Fatalf("after a remove: %q", got)
	}
}
