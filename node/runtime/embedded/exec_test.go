package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn/internal/testimage"
	"cairn/node/runtime/embedded/helper"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func readTrimmed(path string) (string, error) {
	raw, err := os.ReadFile(path)
	return strings.TrimSpace(string(raw)), err
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o644) }

func TestExecSyncRunsInTheContainer(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("exec")
	cfg := container("app", "sh", "-c", "echo inside > /tmp/mark; exec sleep 1000")
	cfg.Linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: testimage.UserUID}
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "MODE", Value: []byte("probe")}}
	cfg.WorkingDir = "/tmp"
	id := e.start(sb, cfg)
	e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 5*time.Second)
	// The container writes its mark right after starting.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if r, err := e.execSync(id, 5, "cat", "/tmp/mark"); err == nil && r.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the container's mark never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		stdout string
		stderr string
		code   int32
	}{
		{"output and exit code", []string{"sh", "-c", "echo out; echo err >&2; exit 4"}, "out\n", "err\n", 4},
		{"container filesystem", []string{"cat", "/tmp/mark"}, "inside\n", "", 0},
		{"container user", []string{"id", "-u"}, "1000\n", "", 0},
		{"supplementary groups from the image", []string{"id", "-G"}, "1000 1001\n", "", 0},
		{"working directory", []string{"pwd"}, "/tmp\n", "", 0},
		{"environment", []string{"sh", "-c", "echo $MODE"}, "probe\n", "", 0},
		{"hostname", []string{"hostname"}, "exec\n", "", 0},
		{"PID namespace", []string{"cat", "/proc/1/comm"}, "sleep\n", "", 0},
		{"command not found", []string{"no-such-command"}, "", "", helper.ExitNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := e.execSync(id, 10, tc.argv...)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != tc.code || string(r.Stdout) != tc.stdout || (tc.stderr != "" && string(r.Stderr) != tc.stderr) {
				t.Errorf("exec %q = exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.argv, r.ExitCode, r.Stdout, r.Stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err := e.execSync(id, 1, "sleep", "30")
		if !errors.Is(err, context.DeadlineExceeded) || status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("exec past its timeout = %v, want DeadlineExceeded (as an error and a gRPC status)", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("exec with a 1s timeout took %s", took)
		}
		// The killed command may linger as a zombie: the container's
		// PID 1 (sleep) reaps nobody. Count live sleeps only.
		live := `for p in /proc/[0-9]*; do [ "$(cat $p/comm)" = sleep ] && grep -q "^State:.*[RSD]" $p/status && echo $p; done | wc -l`
		r, err := e.execSync(id, 5, "sh", "-c", live)
		if err != nil || strings.TrimSpace(string(r.Stdout)) != "1" {
			t.Errorf("live sleeps in the container = %q, %v; want only the main one", r.GetStdout(), err)
		}
	})
	if _, err := e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.execSync(id, 5, "true"); err == nil {
		t.Error("exec in a stopped container succeeded")
	}
}

func TestContainerSurvivesTheAgentsExit(t *testing.T) {
	e := newTestEnv(t)
	vol := t.TempDir()
	cfg := container("app", "sh", "-c", "echo up; while [ ! -e /ctl/stop ]; do sleep 0.05; done; echo bye; exit 7")
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: vol, ContainerPath: "/ctl"}}
	// Another process plays the agent: it starts the pod and exits.
	sb, id := e.runAgentProcess(e.podConfig("survivor"), cfg)

	// The agent restarts: a new runtime over the same state.
	e.rt = e.newRuntime()
	list, err := e.rt.ListContainers(e.ctx, &runtimeapi.ListContainersRequest{})
	if err != nil || len(list.Containers) != 1 || list.Containers[0].Id != id || list.Containers[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after restart ListContainers = %v, %v; want %s running", list, err, id)
	}
	sbs, err := e.rt.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	if err != nil || len(sbs.Items) != 1 || sbs.Items[0].Id != sb || e.sandboxIP(sb) == "" {
		t.Fatalf("after restart ListPodSandbox = %v, %v; want %s ready with an IP", sbs, err, sb)
	}
	if addr, ok := e.net.Address(sb); !ok || addr.String() != e.sandboxIP(sb) {
		t.Errorf("the pod network holds %s, %v for the adopted sandbox; want %s", addr, ok, e.sandboxIP(sb))
	}
	logPath := e.status(id).LogPath
	e.waitLog(logPath, "up", 5*time.Second)
	if r, err := e.execSync(id, 5, "echo", "adopted"); err != nil || string(r.Stdout) != "adopted\n" {
		t.Errorf("exec after restart = %v, %v", r, err)
	}

	if err := writeFile(vol+"/stop", ""); err != nil {
		t.Fatal(err)
	}
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if st.ExitCode != 7 || st.Reason != helper.ReasonError {
		t.Errorf("%s, want the exit recorded after the restart: 7, Error", fmtStatus(st))
	}
	e.waitLog(logPath, "bye", 5*time.Second)
}

func TestReopenContainerLogAfterRotation(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("logs")
	vol := t.TempDir()
	cfg := container("ticker", "sh", "-c", "i=0; while true; do i=$((i+1)); echo tick $i; while [ ! -e /ctl/$i ] && [ $i -gt 1 ]; do sleep 0.02; done; sleep 0.02; done")
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: vol, ContainerPath: "/ctl"}}
	id := e.start(sb, cfg)
	logPath := e.status(id).LogPath
	e.waitLog(logPath, "tick 2", 5*time.Second)
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.ReopenContainerLog(e.ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	writeFile(vol+"/2", "")
	e.waitLog(logPath, "tick 3", 5*time.Second)
	if lines := e.logLines(logPath + ".1"); strings.Contains(strings.Join(lines, "\n"), "tick 3") {
		t.Errorf("rotated log got output after the reopen: %q", lines)
	}
	e.rt.StopContainer(e.ctx, &runtimeapi.StopContainerRequest{ContainerId: id})
	if _, err := e.rt.ReopenContainerLog(e.ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err == nil {
		t.Error("ReopenContainerLog of a stopped container succeeded")
	}
}

// TestReopenContainerLogWithoutAnAttachSocket covers the shims the agent
// cannot ask over an attach socket: one that could not make its socket
// reopens its log on SIGUSR1, as shims from before the socket do, and
// one whose socket went away later fails at once with an error that
// says what to do, instead of after a timeout.
func TestReopenContainerLogWithoutAnAttachSocket(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("logs")
	ticker := container("ticker", "sh", "-c", "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.05; done")

	// A directory in the socket's place, which the shim cannot remove.
	id := e.create(sb, ticker)
	dir := e.rt.containerDir(id)
	if err := os.MkdirAll(filepath.Join(dir, helper.AttachSocket, "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	logPath := e.status(id).LogPath
	e.waitLog(logPath, "tick 2", 5*time.Second)
	if err := os.Rename(logPath, logPath+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.ReopenContainerLog(e.ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatalf("reopen through SIGUSR1: %v", err)
	}
	e.waitLog(logPath, "tick", 5*time.Second)

	// A socket removed after the start.
	id2 := e.start(sb, container("ticker2", "sh", "-c", "exec sleep 3600"))
	if err := os.Remove(filepath.Join(e.rt.containerDir(id2), helper.AttachSocket)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := e.rt.ReopenContainerLog(e.ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id2})
	if err == nil || !strings.Contains(err.Error(), "restart the container") {
		t.Errorf("ReopenContainerLog without the socket = %v, want an error saying to restart the container", err)
	}
	if took := time.Since(start); took > reopenTimeout/2 {
		t.Errorf("ReopenContainerLog without the socket took %v, want an answer at once", took)
	}
}

func TestPodsReachEachOtherOverThePodNetwork(t *testing.T) {
	e := newTestEnv(t)
	server := e.runPod("server")
	client := e.runPod("client")
	srv := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "http"},
		Image:    &runtimeapi.ImageSpec{Image: testimage.HTTPServerRef},
		LogPath:  "http.log",
	}
	srvID := e.start(server, srv)
	e.waitLog(e.status(srvID).LogPath, "listening", 5*time.Second)
	url := "http://" + e.sandboxIP(server) + ":8080/"
	cli := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "get"},
		Image:    &runtimeapi.ImageSpec{Image: testimage.HTTPServerRef},
		Command:  []string{"/bin/testhttp", "get", url},
		LogPath:  "get.log",
	}
	id := e.start(client, cli)
	st := e.waitState(id, runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if st.ExitCode != 0 || !strings.Contains(strings.Join(e.logLines(st.LogPath), "\n"), "hello from server") {
		t.Errorf("client %s, log %q; want hello from server", fmtStatus(st), e.logLines(st.LogPath))
	}
	// The node reaches pods too (the kubelet's HTTP probes).
	r, err := e.execSync(srvID, 5, "/bin/testhttp", "get", "http://127.0.0.1:8080/healthz")
	if err != nil || string(r.Stdout) != "ok\n" {
		t.Errorf("exec probe = %v, %v; want ok", r, err)
	}
}
