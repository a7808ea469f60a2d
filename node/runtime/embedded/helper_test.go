package embedded

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn/internal/privtest"
	"cairn/node/runtime/embedded/helper"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestContainerRunsUnderTheSmallBinaries checks that an agent with
// cairn-helper next to it starts and enters containers with that
// binary rather than with its own, much slower to start, and that the
// shim is the C program.
func TestContainerRunsUnderTheSmallBinaries(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		privtest.Unavailable(t, "no go toolchain to build cairn-helper with")
	}
	e := newTestEnv(t)
	helperBin := filepath.Join(t.TempDir(), HelperName)
	build := exec.Command(gobin, "build", "-o", helperBin, "cairn/cmd/cairn-helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cairn-helper: %v\n%s", err, out)
	}
	e.cfg.HelperBinary = helperBin
	e.rt = e.newRuntime()

	sb := e.runPod("helper")
	id := e.start(sb, container("sleeper", "sh", "-c", "echo up; sleep 30"))
	st, _, err := helper.ReadState(e.rt.containerDir(id))
	if err != nil {
		t.Fatal(err)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", st.ShimPID)); err != nil || exe != e.cfg.ShimBinary {
		t.Errorf("the shim runs %q (%v), want %s", exe, err, e.cfg.ShimBinary)
	}
	e.waitLog(e.status(id).LogPath, "up", 5*time.Second)
	resp, err := e.execSync(id, 5, "sh", "-c", "echo in=$$")
	if err != nil || !strings.HasPrefix(string(resp.Stdout), "in=") {
		t.Errorf("exec through the helper: %v, stdout %q", err, resp.GetStdout())
	}
	if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	got := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if !slices.Contains([]int32{137, 143}, got.ExitCode) {
		t.Errorf("stopped container exit code %d, want 137 or 143", got.ExitCode)
	}
}

// TestCreatingAContainerWithoutTheShimSaysHowToGetIt checks the error of
// an agent installed without cairn-shim beside it.
func TestCreatingAContainerWithoutTheShimSaysHowToGetIt(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("noshim")
	e.cfg.ShimBinary = ""
	e.rt = e.newRuntime()
	if e.rt.cfg.ShimBinary != "" {
		t.Skipf("a %s lies beside the test binary: %s", ShimName, e.rt.cfg.ShimBinary)
	}
	_, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb, Config: container("c", "true"), SandboxConfig: e.podConfig("noshim"),
	})
	if !errors.Is(err, ErrNoShim) || !strings.Contains(err.Error(), "make build") {
		t.Errorf("CreateContainer without the shim: %v, want %v", err, ErrNoShim)
	}
}
