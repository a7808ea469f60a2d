package devcluster

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cairn/node/images"
)

// smallBinary returns a small dynamically linked executable of the host.
func smallBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no `true` binary on this host")
	}
	return p
}

func TestDemoImageHoldsTheBinaryAndWhatItLoads(t *testing.T) {
	bin := smallBinary(t)
	img, err := BuildDemoImage(bin, filepath.Join(t.TempDir(), "layer.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(append(cf.Config.Entrypoint, cf.Config.Cmd...), " "); got != "/cairn __demo-http serve" {
		t.Errorf("command %q", got)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(hdr.Name, "/")] = hdr.Mode
	}
	st, _ := os.Stat(bin)
	if mode, ok := files["/cairn"]; !ok || mode&0o111 == 0 {
		t.Errorf("no executable /cairn in %v (host binary %d bytes)", files, st.Size())
	}
	if files["/tmp"]&0o1777 != 0o1777 {
		t.Errorf("/tmp mode %o", files["/tmp"])
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	interp, _ := elfInterp(f)
	if interp == "" {
		return // a static binary needs nothing else
	}
	if _, ok := files[interp]; !ok {
		t.Errorf("no interpreter %s in %v", interp, files)
	}
	libs, _ := f.ImportedLibraries()
	var ldPath string
	for _, e := range cf.Config.Env {
		if v, ok := strings.CutPrefix(e, "LD_LIBRARY_PATH="); ok {
			ldPath = v
		}
	}
	for _, lib := range libs {
		found := false
		for _, d := range strings.Split(ldPath, ":") {
			_, ok := files[filepath.Join(d, lib)]
			found = found || ok
		}
		if !found {
			t.Errorf("%s is not in the image's LD_LIBRARY_PATH %q: %v", lib, ldPath, files)
		}
	}
}

func TestDemoImageIsBuiltOnceAndImportedOnce(t *testing.T) {
	bin := smallBinary(t)
	dir := t.TempDir()
	tarPath, id, err := demoImageArchive(bin, filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(tarPath)
	again, id2, err := demoImageArchive(bin, filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(again)
	if again != tarPath || id2 != id || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("rebuilt: %s %s, then %s %s", tarPath, id, again, id2)
	}
	agent := filepath.Join(dir, "n1")
	for i := range 2 {
		if err := importDemoImage(context.Background(), tarPath, id, agent); err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
	}
	store, err := images.Open(images.Config{Dir: images.Dir(agent)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(DemoImage)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || !slices.Contains(got.RepoTags, DemoImage) {
		t.Errorf("stored %+v, want ID %s", got, id)
	}
}
