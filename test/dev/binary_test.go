package dev

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"cairn/node/runtime/embedded/shimtest"
)

// kubeVersionLDFlags match the Makefile's: the embedded kubectl reports
// the Kubernetes version whose API Cairn serves.
const kubeVersionLDFlags = "-X k8s.io/component-base/version.gitVersion=v1.37.2 " +
	"-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

// cairnBinary returns the binary under test: CAIRN_BIN, or one built
// into a temporary directory.
func cairnBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("CAIRN_BIN"); bin != "" {
		return bin
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "cairn")
	t.Log("CAIRN_BIN is not set; building cairn (set CAIRN_BIN=bin/cairn to reuse a built one)")
	if out, err := exec.Command(goTool, "build", "-ldflags", kubeVersionLDFlags, "-o", bin, "cairn/cmd/cairn").CombinedOutput(); err != nil {
		t.Fatalf("building cairn: %v\n%s", err, out)
	}
	// Beside the agent, as make build puts it.
	if err := shimtest.Install(filepath.Dir(bin)); err != nil {
		t.Fatal(err)
	}
	return bin
}
