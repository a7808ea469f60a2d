package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"cairn/node/runtime/embedded/shimtest"
)

// TestMain builds the cairn binary once when CAIRN_BIN does not name one,
// and hands its path to the tests through CAIRN_BIN.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if os.Getenv("CAIRN_BIN") != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "cairn-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "cairn")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	fmt.Fprintln(os.Stderr, "e2e: CAIRN_BIN is not set; building cairn (set CAIRN_BIN=bin/cairn to reuse a built one)")
	if out, err := exec.Command(goTool, "build", "-ldflags", kubeVersionLDFlags, "-o", bin, "cairn/cmd/cairn").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building cairn: %v\n%s", err, out)
		return 1
	}
	// Beside the agent, as make build puts it.
	if err := shimtest.Install(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// The environment carries the path so that no package variable has to.
	os.Setenv("CAIRN_BIN", bin)
	return m.Run()
}

// kubeVersionLDFlags match the Makefile's: the embedded kubectl reports the
// Kubernetes version whose API Cairn serves.
const kubeVersionLDFlags = "-X k8s.io/component-base/version.gitVersion=v1.37.2 " +
	"-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
