package cri_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn/internal/testimage"
	"cairn/node/runtime/cri"
	"cairn/node/runtime/cri/critest"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testPodCIDR is the podCIDR the test node gets; the bridge lives in the
// private containerd's network namespace, so it cannot clash with the host.
const testPodCIDR = "10.88.7.0/24"

// criLogLine is one line of a CRI log file: RFC 3339 time, stream, tag
// (F full, P partial) and the content.
var criLogLine = regexp.MustCompile(`^(\S+) (stdout|stderr) ([FP]) (.*)$`)

// node is a private containerd with the busybox image and its pod network
// configured, shared by the subtests of one test.
type node struct {
	c      *critest.Containerd
	rt     *cri.Runtime
	image  string
	logDir string
}

func startNode(t *testing.T) *node {
	c := critest.Start(t)
	busybox, ref := testimage.Busybox(t)
	c.Import(busybox)
	n := &node{c: c, rt: c.Runtime(), image: ref, logDir: t.TempDir()}
	ctx := context.Background()
	_, err := n.rt.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
		RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: testPodCIDR}},
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "containerd reports its network ready once the CNI config is written", func() bool {
		st, err := n.rt.Status(ctx, &runtimeapi.StatusRequest{})
		if err != nil {
			return false
		}
		for _, cond := range st.Status.Conditions {
			if cond.Type == runtimeapi.NetworkReady {
				return cond.Status
			}
		}
		return false
	})
	return n
}

// pod runs a sandbox and returns its id and config.
func (n *node) pod(t *testing.T, name string) (string, *runtimeapi.PodSandboxConfig) {
	t.Helper()
	uid := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "critest", Uid: uid},
		Hostname:     name,
		LogDirectory: filepath.Join(n.logDir, uid),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: n.c.CgroupParent + "/pod" + uid,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			},
		},
	}
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		t.Fatal(err)
	}
	resp, err := n.rt.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v\n%s", err, n.c.Log())
	}
	return resp.PodSandboxId, cfg
}

// container creates and starts a busybox container running cmd.
func (n *node) container(t *testing.T, podID string, pod *runtimeapi.PodSandboxConfig, name string, attempt uint32, res *runtimeapi.LinuxContainerResources, cmd ...string) string {
	t.Helper()
	ctx := context.Background()
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: n.image},
		Command:  cmd,
		LogPath:  fmt.Sprintf("%s/%d.log", name, attempt),
		Linux:    &runtimeapi.LinuxContainerConfig{Resources: res},
	}
	created, err := n.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
	if err != nil {
		t.Fatalf("CreateContainer %s: %v", name, err)
	}
	if _, err := n.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.ContainerId}); err != nil {
		t.Fatalf("StartContainer %s: %v\n%s", name, err, n.c.Log())
	}
	return created.ContainerId
}

// waitExited returns the status of container id once it has exited.
func (n *node) waitExited(t *testing.T, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	var st *runtimeapi.ContainerStatus
	eventually(t, 30*time.Second, "container "+id+" exits", func() bool {
		resp, err := n.rt.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		st = resp.Status
		return st.State == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	return st
}

func TestContainerdRunsPods(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()

	t.Run("BusyboxContainerWritesCRILogs", func(t *testing.T) {
		podID, pod := n.pod(t, "logs")
		id := n.container(t, podID, pod, "echo", 0, nil, "sh", "-c", "echo hello; echo oops >&2; echo bye")
		st := n.waitExited(t, id)
		if st.ExitCode != 0 {
			t.Fatalf("exit code %d (%s: %s), want 0", st.ExitCode, st.Reason, st.Message)
		}
		if want := filepath.Join(pod.LogDirectory, "echo", "0.log"); st.LogPath != want {
			t.Errorf("log path %q, want %q", st.LogPath, want)
		}
		got := readCRILog(t, filepath.Join(pod.LogDirectory, "echo", "0.log"))
		want := []string{"stdout hello", "stderr oops", "stdout bye"}
		if len(got) != 3 || !sameLines(got, want) {
			t.Fatalf("log lines %q, want %q (stdout and stderr may interleave)", got, want)
		}
	})

	t.Run("CrashingContainerIsRecreatedWithTheNextAttempt", func(t *testing.T) {
		podID, pod := n.pod(t, "crash")
		var last string
		for attempt := uint32(0); attempt < 2; attempt++ {
			id := n.container(t, podID, pod, "crasher", attempt, nil, "sh", "-c", "echo attempt; exit 3")
			st := n.waitExited(t, id)
			if st.ExitCode != 3 || st.Reason != "Error" {
				t.Fatalf("attempt %d: exit code %d reason %q, want 3 and Error", attempt, st.ExitCode, st.Reason)
			}
			if st.Metadata.Attempt != attempt {
				t.Fatalf("attempt %d reported as %d", attempt, st.Metadata.Attempt)
			}
			if last != "" {
				if _, err := n.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: last}); err != nil {
					t.Fatal(err)
				}
			}
			last = id
		}
		for attempt := 0; attempt < 2; attempt++ {
			if got := readCRILog(t, filepath.Join(pod.LogDirectory, "crasher", fmt.Sprintf("%d.log", attempt))); !sameLines(got, []string{"stdout attempt"}) {
				t.Errorf("attempt %d log %q", attempt, got)
			}
		}
		list, err := n.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID}})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Containers) != 1 || list.Containers[0].Metadata.Attempt != 1 {
			t.Fatalf("containers of the pod: %v, want only attempt 1", list.Containers)
		}
	})

	t.Run("ExecSync", func(t *testing.T) {
		podID, pod := n.pod(t, "exec")
		// oom_score_adj below containerd's own would need CAP_SYS_RESOURCE:
		// restrict_oom_score_adj in the config lets the container start.
		id := n.container(t, podID, pod, "sleeper", 0, &runtimeapi.LinuxContainerResources{OomScoreAdj: -997}, "sleep", "3600")
		resp, err := n.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 7"}, Timeout: 10})
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Stdout) != "out\n" || string(resp.Stderr) != "err\n" || resp.ExitCode != 7 {
			t.Fatalf("ExecSync: stdout %q stderr %q exit %d, want out, err, 7", resp.Stdout, resp.Stderr, resp.ExitCode)
		}
		start := time.Now()
		if _, err := n.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sleep", "30"}, Timeout: 1}); err == nil {
			t.Fatal("ExecSync of a command outliving its timeout succeeded")
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("ExecSync with a 1s timeout returned after %v", d)
		}
	})

	t.Run("MemoryLimitReportsOOMKilled", func(t *testing.T) {
		podID, pod := n.pod(t, "oom")
		limit := int64(32 << 20)
		id := n.container(t, podID, pod, "hog", 0,
			&runtimeapi.LinuxContainerResources{MemoryLimitInBytes: limit, MemorySwapLimitInBytes: limit},
			"dd", "if=/dev/zero", "of=/dev/null", "bs=128M", "count=1")
		st := n.waitExited(t, id)
		if st.Reason != "OOMKilled" || st.ExitCode != 137 {
			t.Fatalf("a container over its memory limit exited with %d, reason %q, want 137 and OOMKilled", st.ExitCode, st.Reason)
		}
	})

	t.Run("SandboxGetsAnIPFromTheCNIConfig", func(t *testing.T) {
		podID, pod := n.pod(t, "net")
		status, err := n.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
		if err != nil {
			t.Fatal(err)
		}
		ip, err := netip.ParseAddr(status.Status.GetNetwork().GetIp())
		if err != nil || !netip.MustParsePrefix(testPodCIDR).Contains(ip) {
			t.Fatalf("sandbox IP %q, want one in %s", status.Status.GetNetwork().GetIp(), testPodCIDR)
		}
		id := n.container(t, podID, pod, "server", 0, nil, "sh", "-c", "while true; do echo hello-from-pod | nc -l -p 8080; done")
		resp, err := n.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"ip", "-4", "addr", "show", "eth0"}, Timeout: 10})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(resp.Stdout), ip.String()+"/24") {
			t.Fatalf("eth0 in the pod:\n%s\nwant %s/24 on it", resp.Stdout, ip)
		}
		// The bridge is the pods' gateway, in containerd's namespace: the
		// pod answers there.
		var got string
		eventually(t, 10*time.Second, "the pod's server answers on its IP", func() bool {
			err := n.c.InNetNS(func() error {
				conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), "8080"), time.Second)
				if err != nil {
					return err
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(2 * time.Second))
				b, err := io.ReadAll(conn)
				got = string(b)
				return err
			})
			return err == nil && got == "hello-from-pod\n"
		})
	})
}

// readCRILog returns a CRI log file's lines as "stream content", checking
// each line's format.
func readCRILog(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := criLogLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("%s: %q is not a CRI log line", path, sc.Text())
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			t.Fatalf("%s: time %q: %v", path, m[1], err)
		}
		if m[3] != "F" {
			t.Fatalf("%s: short line %q tagged partial", path, sc.Text())
		}
		out = append(out, m[2]+" "+m[4])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameLines reports whether got holds want's lines, each stream in order.
func sameLines(got, want []string) bool {
	byStream := func(lines []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range lines {
			stream, _, _ := strings.Cut(l, " ")
			m[stream] = append(m[stream], l)
		}
		return m
	}
	g, w := byStream(got), byStream(want)
	if len(g) != len(w) {
		return false
	}
	for k, lines := range w {
		if strings.Join(g[k], "\n") != strings.Join(lines, "\n") {
			return false
		}
	}
	return true
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
