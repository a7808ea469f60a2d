package embedded

import (
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

// TestContainerRunsUnderTheSmallHelperBinary checks that an agent with
// cairn-shim next to it supervises, starts and enters containers with
// that binary rather than with its own, much slower to start.
func TestContainerRunsUnderTheSmallHelperBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		privtest.Unavailable(t, "no go toolchain to build cairn-shim with")
	}
	e := newTestEnv(t)
	shimBin := filepath.Join(t.TempDir(), HelperName)
	build := exec.Command(gobin, "build", "-o", shimBin, "cairn/cmd/cairn-shim")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cairn-shim: %v\n%s", err, out)
	}
	e.cfg.HelperBinary = shimBin
	e.rt = e.newRuntime()

	sb := e.runPod("helper")
	id := e.start(sb, container("sleeper", "sh", "-c", "echo up; sleep 30"))
	st, _, err := helper.ReadState(e.rt.containerDir(id))
	if err != nil {
		t.Fatal(err)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", st.ShimPID)); err != nil || exe != shimBin {
		t.Errorf("the shim runs %q (%v), want %s", exe, err, shimBin)
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
