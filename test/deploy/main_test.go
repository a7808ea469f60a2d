package deploy

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
	if bin := os.Getenv("CAIRN_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "deploy:", err)
			return 1
		}
		// The runbooks run from other directories.
		os.Setenv("CAIRN_BIN", abs)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "cairn-deploy-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "cairn")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	fmt.Fprintln(os.Stderr, "deploy: CAIRN_BIN is not set; building cairn (set CAIRN_BIN=bin/cairn to reuse a built one)")
	if out, err := exec.Command(goTool, "build", "-ldflags", kubeVersionLDFlags, "-o", bin, "cairn/cmd/cairn").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "deploy: building cairn: %v\n%s", err, out)
		return 1
	}
	// Beside the agent, as make build puts them.
	helper := exec.Command(goTool, "build", "-o", filepath.Join(dir, "cairn-helper"), "cairn/cmd/cairn-helper")
	helper.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := helper.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "deploy: building cairn-helper: %v\n%s", err, out)
		return 1
	}
	if err := shimtest.Install(dir); err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
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

// cairnBin returns the binary under test.
func cairnBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("CAIRN_BIN")
	if bin == "" {
		t.Fatal("deploy: CAIRN_BIN is not set (TestMain sets it)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("deploy: CAIRN_BIN=%s: %v", bin, err)
	}
	return bin
}

// repoRoot is the checkout holding deploy/ and docs/.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "deploy", "install.sh")); err != nil {
		t.Fatalf("deploy: %s is not the repository root: %v", root, err)
	}
	return root
}
