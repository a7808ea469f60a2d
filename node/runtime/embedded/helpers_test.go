package embedded

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn/internal/privtest"
	"cairn/internal/testimage"
	"cairn/node/images"
	"cairn/node/network"
	"cairn/node/runtime/embedded/cgroups"
	"cairn/node/runtime/embedded/helper"
	"cairn/node/runtime/embedded/shimtest"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMain(m *testing.M) {
	MaybeRunInit()
	if cfg := os.Getenv(testAgentEnv); cfg != "" {
		os.Exit(runTestAgent(cfg))
	}
	os.Exit(m.Run())
}

// testEnv is a runtime over a temporary state directory, with a pod
// network in a node namespace of its own, so tests never touch the
// host's network.
type testEnv struct {
	t      *testing.T
	dir    string
	rt     *Runtime
	cfg    Config
	logDir string
	nodeNS string
	net    *network.Network
	ctx    context.Context
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin)
	dir := t.TempDir()
	e := &testEnv{t: t, dir: dir, logDir: filepath.Join(dir, "logs"), ctx: context.Background()}
	store, err := images.Open(images.Config{Dir: filepath.Join(dir, "images")})
	if err != nil {
		t.Fatal(err)
	}
	for _, build := range []func(testing.TB) (string, string){testimage.Busybox, testimage.HTTPServer} {
		tarPath, _ := build(t)
		if _, err := store.Import(e.ctx, tarPath); err != nil {
			t.Fatal(err)
		}
	}
	var b [4]byte
	rand.Read(b[:])
	e.cfg = Config{
		StateDir:   filepath.Join(dir, "runtime"),
		NetNSDir:   filepath.Join(dir, "netns"),
		CgroupRoot: "/cairn-test-" + hex.EncodeToString(b[:]),
		Images:     store,
		Logger:     slog.New(slog.DiscardHandler),
		// The test binary itself, through TestMain, and the shim of
		// these sources: installed ones may belong to another version.
		HelperBinary: helper.SelfExe,
		ShimBinary:   shimtest.Binary(t),
	}
	e.nodeNS = filepath.Join(dir, "node-netns")
	if err := network.NewNetNS(e.nodeNS); err != nil {
		privtest.Unavailable(t, "cannot create a network namespace: %v", err)
	}
	// From here on everything made is undone at cleanup, even if the
	// test fails half-way.
	t.Cleanup(e.cleanup)
	e.net, err = network.New(network.Config{NetNS: e.nodeNS, StateDir: filepath.Join(dir, "network"), ClusterCIDR: "10.97.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Network = e.net
	e.rt = e.newRuntime()
	if _, err := e.rt.UpdateRuntimeConfig(e.ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: &runtimeapi.RuntimeConfig{
		NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "10.97.1.0/24"},
	}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// newRuntime opens a runtime over the environment's state, as an agent
// (re)start does.
func (e *testEnv) newRuntime() *Runtime {
	e.t.Helper()
	rt, err := New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return rt
}

// cleanup removes every sandbox, and with them every container, mount,
// namespace and cgroup, even after a failure.
func (e *testEnv) cleanup() {
	// A runtime fresh from disk also sees what other processes made.
	rt := e.rt
	if fresh, err := New(e.cfg); err == nil {
		rt = fresh
	}
	if rt != nil {
		sbs, _ := rt.ListPodSandbox(e.ctx, &runtimeapi.ListPodSandboxRequest{})
		for _, sb := range sbs.GetItems() {
			if _, err := rt.RemovePodSandbox(e.ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
				e.t.Errorf("cleanup: %v", err)
			}
		}
	}
	if e.net != nil {
		if err := e.net.Teardown(); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
		e.net.Close()
	}
	if err := network.RemoveNetNS(e.nodeNS); err != nil {
		e.t.Errorf("cleanup: %v", err)
	}
	if layout, err := cgroups.Detect(); err == nil {
		if err := layout.Paths(e.cfg.CgroupRoot).Remove(); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
}

// runPod starts a sandbox named name on the pod network.
func (e *testEnv) runPod(name string) string {
	e.t.Helper()
	resp, err := e.rt.RunPodSandbox(e.ctx, &runtimeapi.RunPodSandboxRequest{Config: e.podConfig(name)})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.PodSandboxId
}

func (e *testEnv) podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name + "-uid"},
		Hostname:     name,
		LogDirectory: filepath.Join(e.logDir, name),
		DnsConfig:    &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"default.svc.cluster.local"}},
		Labels:       map[string]string{"app": name},
		// As the kubelet asks for a pod without shareProcessNamespace:
		// a PID namespace per container.
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}}},
	}
}

// container returns the config of a busybox container running argv.
func container(name string, argv ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: testimage.BusyboxRef},
		Command:  argv,
		LogPath:  name + ".log",
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}}},
	}
}

// start creates and starts a container in a sandbox.
func (e *testEnv) start(sandbox string, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	id := e.create(sandbox, cfg)
	if _, err := e.rt.StartContainer(e.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *testEnv) create(sandbox string, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	resp, err := e.rt.CreateContainer(e.ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandbox, Config: cfg, SandboxConfig: e.podConfig("unused"),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.ContainerId
}

func (e *testEnv) status(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	resp, err := e.rt.ContainerStatus(e.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Status
}

// waitState polls until the container is in state, and returns its
// status.
func (e *testEnv) waitState(id string, state runtimeapi.ContainerState, timeout time.Duration) *runtimeapi.ContainerStatus {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := e.status(id)
		if st.State == state {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("container %s is %s after %s, want %s (log: %q)", id, st.State, timeout, state, e.logLines(st.LogPath))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// criLine matches a CRI log entry.
var criLine = regexp.MustCompile(`^(\S+) (stdout|stderr) (F|P) (.*)$`)

// logLines returns the entries of a CRI log as "stream: line", checking
// their format.
func (e *testEnv) logLines(path string) []string {
	e.t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := criLine.FindStringSubmatch(sc.Text())
		if m == nil {
			e.t.Errorf("malformed CRI log line %q", sc.Text())
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			e.t.Errorf("CRI log line %q: bad timestamp: %v", sc.Text(), err)
		}
		out = append(out, m[2]+": "+m[4])
	}
	return out
}

// waitLog polls the CRI log until it has an entry containing want.
func (e *testEnv) waitLog(path, want string, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		lines := e.logLines(path)
		for _, l := range lines {
			if strings.Contains(l, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("log %s has no line with %q after %s: %q", path, want, timeout, lines)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *testEnv) execSync(id string, timeout int64, argv ...string) (*runtimeapi.ExecSyncResponse, error) {
	return e.rt.ExecSync(e.ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: argv, Timeout: timeout})
}

func (e *testEnv) sandboxIP(id string) string {
	e.t.Helper()
	resp, err := e.rt.PodSandboxStatus(e.ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Status.GetNetwork().GetIp()
}

func fmtStatus(st *runtimeapi.ContainerStatus) string {
	return fmt.Sprintf("state=%s exit=%d reason=%q message=%q", st.State, st.ExitCode, st.Reason, st.Message)
}
