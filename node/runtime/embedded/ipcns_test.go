package embedded

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestAPodsContainersShareItsIPCNamespaceAndShm runs a pod as the kubelet
// asks for one: its containers share one IPC namespace and one /dev/shm,
// where an IPC sysctl of the pod applies, and a hostIPC pod's containers
// are on the host's.
func TestAPodsContainersShareItsIPCNamespaceAndShm(t *testing.T) {
	e := newTestEnv(t)
	cfg := e.podConfig("ipc")
	cfg.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1"}
	resp, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	sb := resp.PodSandboxId
	run := func(sandbox, name, script string) []string {
		t.Helper()
		st := e.waitState(e.start(sandbox, container(name, "sh", "-c", script)), runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
		if st.ExitCode != 0 {
			t.Fatalf("%s: %s, log %q", name, fmtStatus(st), e.logLines(st.LogPath))
		}
		return e.logLines(st.LogPath)
	}
	report := `echo "ipc $(readlink /proc/self/ns/ipc)"; echo "rmid $(cat /proc/sys/kernel/shm_rmid_forced)"; echo "shm $(cat /dev/shm/note 2>/dev/null)"`
	writer := run(sb, "writer", "echo from-writer > /dev/shm/note; "+report)
	reader := run(sb, "reader", report)
	privileged := container("privileged", "sh", "-c", report)
	privileged.Linux.SecurityContext.Privileged = true
	st := e.waitState(e.start(sb, privileged), runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if got := field(e.logLines(st.LogPath), "shm"); got != "from-writer" {
		t.Errorf("a privileged container of the pod does not share its /dev/shm: it saw %q", got)
	}
	if field(writer, "ipc") == "" || field(writer, "ipc") != field(reader, "ipc") {
		t.Errorf("the pod's containers are in different IPC namespaces: %q, %q", writer, reader)
	}
	if field(reader, "shm") != "from-writer" {
		t.Errorf("the pod's containers do not share /dev/shm: the reader saw %q", reader)
	}
	if field(reader, "rmid") != "1" {
		t.Errorf("the pod's kernel.shm_rmid_forced does not apply in its IPC namespace: %q", reader)
	}
	host, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	if field(reader, "ipc") == host {
		t.Errorf("the pod's IPC namespace is the host's (%s)", host)
	}

	hostCfg := e.podConfig("hostipc")
	hostCfg.Linux.SecurityContext.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
	resp, err = e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: hostCfg})
	if err != nil {
		t.Fatal(err)
	}
	onHost := container("onhost", "sh", "-c", report)
	onHost.Linux.SecurityContext.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
	st = e.waitState(e.start(resp.PodSandboxId, onHost), runtimeapi.ContainerState_CONTAINER_EXITED, 10*time.Second)
	if got := field(e.logLines(st.LogPath), "ipc"); got != host {
		t.Errorf("a hostIPC container is in IPC namespace %q, want the host's %q", got, host)
	}

	// Stopping the sandbox ends its IPC namespace and /dev/shm.
	e.rt.mu.Lock()
	ipcNS, shm := e.rt.sandboxes[sb].IPCNS, e.rt.sandboxes[sb].Shm
	e.rt.mu.Unlock()
	if _, err := e.rt.StopPodSandbox(e.ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ipcNS); !os.IsNotExist(err) {
		t.Errorf("the pod's IPC namespace %s outlives its sandbox: %v", ipcNS, err)
	}
	if _, err := os.Stat(shm + "/note"); !os.IsNotExist(err) {
		t.Errorf("the pod's /dev/shm is still mounted after its sandbox stopped: %v", err)
	}
}

// TestASandboxLeftHalfMadeIsCleanedUp restarts the runtime over a
// sandbox whose record was never written, as when the agent crashes
// while it makes one: its namespaces and /dev/shm do not outlive it.
func TestASandboxLeftHalfMadeIsCleanedUp(t *testing.T) {
	e := newTestEnv(t)
	sb := e.runPod("halfmade")
	e.rt.mu.Lock()
	netns, ipcNS, shm := e.rt.sandboxes[sb].NetNS, e.rt.sandboxes[sb].IPCNS, e.rt.sandboxes[sb].Shm
	e.rt.mu.Unlock()
	if err := os.Remove(filepath.Join(e.rt.sandboxDir(sb), "sandbox.json")); err != nil {
		t.Fatal(err)
	}
	e.rt = e.newRuntime()
	for _, p := range []string{netns, ipcNS, shm, e.rt.sandboxDir(sb)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s outlives its dropped sandbox: %v", p, err)
		}
	}
}

// TestSysctlsOfTheHostAreRefused refuses the sysctls a
// pod would set for the whole host.
func TestSysctlsOfTheHostAreRefused(t *testing.T) {
	e := newTestEnv(t)
	for name, sysctl := range map[string]string{"kernel-hostname": "kernel.hostname", "vm": "vm.swappiness"} {
		cfg := e.podConfig(name)
		cfg.Linux.Sysctls = map[string]string{sysctl: "1"}
		_, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err == nil || !strings.Contains(err.Error(), "not namespaced") {
			t.Errorf("sysctl %s: %v, want a refusal", sysctl, err)
		}
	}
	cfg := e.podConfig("hostipc-sysctl")
	cfg.Linux.SecurityContext.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
	cfg.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1"}
	if _, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err == nil || !strings.Contains(err.Error(), "host's") {
		t.Errorf("an IPC sysctl on the host's IPC namespace: %v, want a refusal", err)
	}
}

// field returns the value of the "stdout: key value" line of lines.
func field(lines []string, key string) string {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "stdout: "+key+" "); ok {
			return v
		}
		if l == "stdout: "+key {
			return ""
		}
	}
	return ""
}
