package testimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// PauseRef names the pause image in the archives this package writes. It
// is the sandbox image of the test containerd (hack/containerd).
const PauseRef = "cairn.test/pause:latest"

// pauseSource is the pause program: it waits for SIGTERM or SIGINT,
// reaping the pod's orphans meanwhile, as the pod infrastructure
// container does when it is PID 1 of a pod's shared PID namespace.
const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	child := make(chan os.Signal, 1)
	signal.Notify(child, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-child:
			for {
				var ws syscall.WaitStatus
				if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
`

// PauseImage returns an image whose entrypoint, /pause, is a static binary
// that sleeps until it is told to stop: a pod sandbox image built offline.
func PauseImage(t testing.TB) v1.Image {
	t.Helper()
	bin, err := os.ReadFile(PauseBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := Layer([]File{
		{Path: "pause", Mode: 0o755, Data: bin},
		{Path: "dev", Mode: fs.ModeDir | 0o755},
		{Path: "etc", Mode: fs.ModeDir | 0o755},
		{Path: "proc", Mode: fs.ModeDir | 0o555},
		{Path: "sys", Mode: fs.ModeDir | 0o555},
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image(v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Pause writes PauseImage as an OCI layout tar in a temporary directory and
// returns its path and the image reference it carries.
func Pause(t testing.TB) (tarPath, ref string) {
	t.Helper()
	tarPath = filepath.Join(t.TempDir(), "pause-oci.tar")
	if err := WriteOCILayoutTar(tarPath, map[string]v1.Image{PauseRef: PauseImage(t)}); err != nil {
		t.Fatal(err)
	}
	return tarPath, PauseRef
}

// PauseBinary returns the path of a static pause binary, built with
// `go build` (CGO_ENABLED=0) from pauseSource into the user cache
// directory when the cached one is missing or the source changed.
func PauseBinary(t testing.TB) string {
	t.Helper()
	sum := sha256.Sum256([]byte(pauseSource + runtime.Version() + runtime.GOARCH))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cairn-testimage")
	bin := filepath.Join(dir, "pause-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("testimage: %v", err)
	}
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module pause\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatalf("testimage: %v", err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(pauseSource), 0o644); err != nil {
		t.Fatalf("testimage: %v", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// Build next to the final name and rename, so that test binaries
	// building at the same time never see half a file.
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.Command(goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("testimage: go build pause: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatalf("testimage: %v", err)
	}
	return bin
}
