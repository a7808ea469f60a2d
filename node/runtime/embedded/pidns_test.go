package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/node/runtime/embedded/helper"

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
	if slices.Contains(lines, "stdout: self 1") {
		t.Errorf("the debugger is PID 1 of a namespace of its own: %q", lines)
	}

	alone := e.start(sb, container("alone", "sh", "-c", ps))
	st = e.waitState(alone, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if lines := e.logLines(st.LogPath); containsLine(lines, "sleep 3600") || !slices.Contains(lines, "stdout: self 1") {
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

// TestAHostPIDContainerSeesTheHostsProcesses runs a container of a pod
// with hostPID, as `kubectl debug node/NAME` makes: its /proc is the
// host's.
func TestAHostPIDContainerSeesTheHostsProcesses(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("nodedebug")
	cfg := container("host", "sh", "-c", fmt.Sprintf("test -d /proc/%d && echo sees-the-agent; echo self $$", os.Getpid()))
	cfg.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE}
	id := e.start(sb, cfg)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	lines := e.logLines(st.LogPath)
	if st.ExitCode != 0 || !slices.Contains(lines, "stdout: sees-the-agent") || slices.Contains(lines, "stdout: self 1") {
		t.Errorf("a hostPID container: %s, log %q; want it to see the agent's process", fmtStatus(st), lines)
	}
}

// TestAPodSharesOnePIDNamespace runs a pod with shareProcessNamespace:
// its containers see each other's processes, under the pod's own init,
// which ends with the sandbox.
func TestAPodSharesOnePIDNamespace(t *testing.T) {
	e := newTestEnv(t)
	cfg := e.podConfig("shared")
	cfg.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	resp, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	sb := resp.PodSandboxId
	shared := &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD}
	app := container("app", "sleep", "3600")
	app.Linux.SecurityContext.NamespaceOptions = shared
	appID := e.start(sb, app)
	e.waitState(appID, runtimeapi.ContainerState_CONTAINER_RUNNING, 10*time.Second)

	ps := `for p in /proc/[0-9]*; do echo "proc ${p#/proc/} $(tr '\0' ' ' < $p/cmdline)"; done; echo "self $$"`
	peer := container("peer", "sh", "-c", ps)
	peer.Linux.SecurityContext.NamespaceOptions = shared
	st := e.waitState(e.start(sb, peer), runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	lines := e.logLines(st.LogPath)
	if !hasLine(lines, "stdout: proc 1 ") || hasLine(lines, "stdout: proc 1 sleep") || !containsLine(lines, "sleep 3600") || slices.Contains(lines, "stdout: self 1") {
		t.Errorf("a container of a pod sharing its PID namespace does not see its peer under the pod's init: %q", lines)
	}

	// The pod's init leaves nothing of the host to reach through
	// /proc/1, and its processes cannot kill it.
	probe := container("probe", "sh", "-c", `echo "root=$(ls -A /proc/1/root | wc -l) uid=$(awk '/^Uid/ {print $2}' /proc/1/status)"; kill -HUP 1; kill -TERM 1; kill -QUIT 1; sleep 0.2; echo "alive=$(cat /proc/1/cmdline | wc -c)"`)
	probe.Linux.SecurityContext.NamespaceOptions = shared
	probe.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"SYS_PTRACE"}}
	st = e.waitState(e.start(sb, probe), runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	lines = e.logLines(st.LogPath)
	if !slices.Contains(lines, "stdout: root=0 uid=65535") {
		t.Errorf("the pod's init shows a root or a user to its pod: %q", lines)
	}
	if state := e.sandboxState(sb); containsLine(lines, "alive=0") || state != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("the pod's signals ended its init: %q, sandbox %s", lines, state)
	}

	// What a container leaves running in the shared namespace ends with it.
	forker := container("forker", "sh", "-c", "sleep 4242 & echo started")
	forker.Linux.SecurityContext.NamespaceOptions = shared
	e.waitState(e.start(sb, forker), runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if pids := processesRunning("sleep\x004242\x00"); len(pids) > 0 {
		t.Errorf("the processes %v a container left outlive it", pids)
	}

	e.rt.mu.Lock()
	podInit := *e.rt.sandboxes[sb].PodInit
	e.rt.mu.Unlock()
	// A dead init leaves a sandbox the kubelet must replace.
	syscall.Kill(podInit.PID, syscall.SIGKILL)
	eventuallyState := func(want runtimeapi.PodSandboxState) {
		deadline := time.Now().Add(5 * time.Second)
		for e.sandboxState(sb) != want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := e.sandboxState(sb); got != want {
			t.Errorf("sandbox %s after its init died, want %s", got, want)
		}
	}
	eventuallyState(runtimeapi.PodSandboxState_SANDBOX_NOTREADY)
	if _, err := e.rt.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if helper.Alive(podInit.PID, podInit.Start) {
		t.Errorf("the pod's init %d outlives its stopped sandbox", podInit.PID)
	}
	_, err = e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: peer, SandboxConfig: cfg})
	if err == nil {
		t.Error("a container was created in a stopped sandbox")
	}
}

// processesRunning returns the host's processes whose command line is
// cmdline, with its NUL separators.
func processesRunning(cmdline string) []int {
	var out []int
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		if raw, err := os.ReadFile(p); err == nil && string(raw) == cmdline {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, pid)
		}
	}
	return out
}

func (e *testEnv) sandboxState(id string) runtimeapi.PodSandboxState {
	e.t.Helper()
	resp, err := e.rt.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Status.State
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func hasLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
