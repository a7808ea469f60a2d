package embedded

import (
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestAContainerJoinsItsTargetsPIDNamespace runs what `kubectl debug
// --target` asks of the runtime: a container in the PID namespace of
// another one of its pod (CRI NamespaceMode TARGET), which sees the
// target's processes, while a container without a target sees only its
// own.
func TestAContainerJoinsItsTargetsPIDNamespace(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("debugged")
	app := e.start(sb, container("app", "sleep", "3600"))
	e.waitState(app, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	ps := `for p in /proc/[0-9]*; do echo "proc ${p#/proc/} $(tr '\0' ' ' < $p/cmdline)"; done; echo "self $$"`
	debug := container("debugger", "sh", "-c", ps)
	debug.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: app}
	id := e.start(sb, debug)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if st.ExitCode != 0 {
		t.Fatalf("debugger: %s, log %q", fmtStatus(st), e.logLines(st.LogPath))
	}
	lines := e.logLines(st.LogPath)
	if !hasLine(lines, "stdout: proc 1 sleep 3600 ") {
		t.Errorf("the debugger does not see its target's process as PID 1: %q", lines)
	}
	if hasLine(lines, "stdout: self 1") {
		t.Errorf("the debugger is PID 1 of a namespace of its own: %q", lines)
	}

	alone := e.start(sb, container("alone", "sh", "-c", ps))
	st = e.waitState(alone, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if lines := e.logLines(st.LogPath); hasLine(lines, "sleep 3600") || !hasLine(lines, "stdout: self 1") {
		t.Errorf("a container without a target shares a PID namespace: %q", lines)
	}

	// A target that is gone or not running is refused at create.
	if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: app, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{app, "no-such-container"} {
		debug.Linux.SecurityContext.NamespaceOptions.TargetId = target
		_, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: debug, SandboxConfig: e.podConfig("unused")})
		if err == nil || !strings.Contains(err.Error(), "target container") {
			t.Errorf("create with target %s: %v, want a refusal naming the target container", target, err)
		}
	}
}

func hasLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
