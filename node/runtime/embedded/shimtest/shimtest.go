// Package shimtest builds the embedded runtime's container shim, the C
// program of node/runtime/embedded/shim, for the tests that start
// containers: they run the shim of the sources they test, not one
// installed from another version.
package shimtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"

	"cairn/internal/privtest"
)

// CFlags are the C compiler's flags for the shim, as make build's: a
// static binary starts without a dynamic loader's work.
var CFlags = []string{"-O2", "-static", "-Wall", "-Wextra", "-Werror"}

// Compiler returns the C compiler make build uses for the shim: SHIM_CC
// if set, else musl-gcc when there is one, whose static binaries start
// in half the time of glibc's (no CPU feature probes, a tenth of the
// pages), else cc.
func Compiler() (string, error) {
	if cc := os.Getenv("SHIM_CC"); cc != "" {
		return exec.LookPath(cc)
	}
	if cc, err := exec.LookPath("musl-gcc"); err == nil {
		return cc, nil
	}
	return exec.LookPath("cc")
}

var (
	once   sync.Once
	built  string
	errCC  error
	errOut error
)

// Binary returns the shim built from this checkout's sources, building
// it once per process. Without a C compiler the test is skipped, or
// fails under privtest's strict mode.
func Binary(t testing.TB) string {
	t.Helper()
	once.Do(func() { built, errCC, errOut = build() })
	if errCC != nil {
		privtest.Unavailable(t, "no C compiler to build the container shim with: %v", errCC)
	}
	if errOut != nil {
		t.Fatalf("building the container shim: %v", errOut)
	}
	return built
}

// Build is Binary for a TestMain: without a C compiler it fails.
func Build() (string, error) {
	once.Do(func() { built, errCC, errOut = build() })
	if errCC != nil {
		return "", fmt.Errorf("no C compiler to build the container shim with: %w", errCC)
	}
	return built, errOut
}

// Install builds the shim and copies it into dir as cairn-shim, where an
// agent built into dir finds it.
func Install(dir string) error {
	shim, err := Build()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(shim)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cairn-shim"), raw, 0o755)
}

// Sources returns the directory of the shim's sources.
func Sources() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "shim")
}

// build compiles the shim into the user's cache directory, under the
// hash of its sources and flags: test runs after the first of a version
// reuse it, which keeps them as fast as before the shim was C.
func build() (path string, ccErr, err error) {
	cc, ccErr := Compiler()
	if ccErr != nil {
		return "", ccErr, nil
	}
	src := Sources()
	files, err := filepath.Glob(filepath.Join(src, "*.[ch]"))
	if err != nil || len(files) == 0 {
		return "", nil, fmt.Errorf("no sources in %s (%v)", src, err)
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintln(h, cc, CFlags)
	var cfiles []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", nil, err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(raw))
		h.Write(raw)
		if filepath.Ext(f) == ".c" {
			cfiles = append(cfiles, f)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "cairn", "shim", hex.EncodeToString(h.Sum(nil))[:16])
	path = filepath.Join(dir, "cairn-shim")
	if fi, err := os.Stat(path); err == nil && fi.Mode()&0o111 != 0 {
		return path, nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	// Built beside and renamed, so that a concurrent test process never
	// runs half a binary.
	tmp, err := os.CreateTemp(dir, ".cairn-shim-")
	if err != nil {
		return "", nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := append(append([]string{}, CFlags...), "-o", tmp.Name())
	out, err := exec.Command(cc, append(args, cfiles...)...).CombinedOutput()
	if err != nil {
		return "", nil, fmt.Errorf("%s: %v\n%s", cc, err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", nil, err
	}
	return path, nil, nil
}
