package testimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// HTTPServerRef names the HTTP server image in the archives this package
// writes.
const HTTPServerRef = "cairn.test/httpserver:latest"

// HTTPServerPort is the port the HTTP server image listens on.
const HTTPServerPort = 8080

// testhttpPackage is the import path of the server's source.
const testhttpPackage = "cairn/internal/testimage/testhttp"

// HTTPServerImage returns the busybox image plus /bin/testhttp, a static
// Go binary that serves HTTP on HTTPServerPort by default (see its package
// doc for the endpoints) and doubles as an HTTP client (`testhttp get URL`).
// The binary is built once per source version and cached.
func HTTPServerImage(t testing.TB) v1.Image {
	t.Helper()
	bin, err := os.ReadFile(TestHTTPBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	base, err := Layer(busyboxFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	top, err := Layer([]File{{Path: "bin/testhttp", Mode: 0o755, Data: bin}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image(v1.Config{
		Entrypoint:   []string{"/bin/testhttp"},
		Cmd:          []string{"serve"},
		Env:          []string{defaultPath},
		ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", HTTPServerPort): {}},
	}, base, top)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// HTTPServer writes HTTPServerImage as an OCI layout tar in a temporary
// directory and returns its path and the image reference it carries.
func HTTPServer(t testing.TB) (tarPath, ref string) {
	t.Helper()
	tarPath = filepath.Join(t.TempDir(), "httpserver-oci.tar")
	if err := WriteOCILayoutTar(tarPath, map[string]v1.Image{HTTPServerRef: HTTPServerImage(t)}); err != nil {
		t.Fatal(err)
	}
	return tarPath, HTTPServerRef
}

// TestHTTPBinary returns the path of a static testhttp binary, building it
// with `go build` (CGO_ENABLED=0) into the user cache directory when the
// cached one is missing or its source changed.
func TestHTTPBinary(t testing.TB) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testimage: cannot locate the testhttp source")
	}
	src, err := os.ReadFile(filepath.Join(filepath.Dir(self), "testhttp", "main.go"))
	if err != nil {
		t.Fatalf("testimage: reading the testhttp source: %v", err)
	}
	sum := sha256.Sum256(append(src, runtime.Version()+runtime.GOARCH...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cairn-testimage")
	bin := filepath.Join(dir, "testhttp-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testimage: %v", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// Build next to the final name and rename, so that test binaries
	// building at the same time never see half a file.
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, testhttpPackage)
	cmd.Dir = filepath.Dir(self)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("testimage: go build %s: %v\n%s", testhttpPackage, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatalf("testimage: %v", err)
	}
	return bin
}
