package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"cairn/node/images"
	"cairn/node/network"
	"cairn/node/runtime/embedded/helper"

	"google.golang.org/protobuf/encoding/protojson"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testAgentEnv names the file that turns the test binary into a
// short-lived agent: it starts one pod and container, then exits without
// any cleanup, as a killed agent would.
const testAgentEnv = "CAIRN_TEST_AGENT_CONFIG"

// testAgentConfig is what the short-lived agent runs.
type testAgentConfig struct {
	StateDir   string          `json:"stateDir"`
	NetNSDir   string          `json:"netnsDir"`
	CgroupRoot string          `json:"cgroupRoot"`
	ImagesDir  string          `json:"imagesDir"`
	NodeNS     string          `json:"nodeNS"`
	NetworkDir string          `json:"networkDir"`
	ShimBinary string          `json:"shimBinary"`
	Pod        json.RawMessage `json:"pod"`
	Container  json.RawMessage `json:"container"`
}

// runAgentProcess starts a pod and a container from another process,
// which exits at once, and returns their IDs.
func (e *testEnv) runAgentProcess(pod *runtimeapi.PodSandboxConfig, ctr *runtimeapi.ContainerConfig) (sandboxID, containerID string) {
	e.t.Helper()
	podJSON, _ := protojson.Marshal(pod)
	ctrJSON, _ := protojson.Marshal(ctr)
	cfg := testAgentConfig{
		StateDir: e.cfg.StateDir, NetNSDir: e.cfg.NetNSDir, CgroupRoot: e.cfg.CgroupRoot,
		ImagesDir: filepath.Join(e.dir, "images"), NodeNS: e.nodeNS, NetworkDir: filepath.Join(e.dir, "network"),
		ShimBinary: e.cfg.ShimBinary,
		Pod:        podJSON, Container: ctrJSON,
	}
	path := filepath.Join(e.dir, "agent.json")
	raw, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), testAgentEnv+"="+path)
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("the agent process failed: %v: %s", err, out)
	}
	ids := strings.Fields(string(out))
	if len(ids) != 2 {
		e.t.Fatalf("the agent process printed %q, want two IDs", out)
	}
	return ids[0], ids[1]
}

func runTestAgent(path string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "test agent:", err)
		return 1
	}
	var cfg testAgentConfig
	if err := helper.ReadJSON(path, &cfg); err != nil {
		return fail(err)
	}
	store, err := images.Open(images.Config{Dir: cfg.ImagesDir})
	if err != nil {
		return fail(err)
	}
	n, err := network.New(network.Config{NetNS: cfg.NodeNS, StateDir: cfg.NetworkDir})
	if err != nil {
		return fail(err)
	}
	rt, err := New(Config{StateDir: cfg.StateDir, NetNSDir: cfg.NetNSDir, CgroupRoot: cfg.CgroupRoot, Images: store, Network: n, ShimBinary: cfg.ShimBinary})
	if err != nil {
		return fail(err)
	}
	pod, ctr := &runtimeapi.PodSandboxConfig{}, &runtimeapi.ContainerConfig{}
	if err := protojson.Unmarshal(cfg.Pod, pod); err != nil {
		return fail(err)
	}
	if err := protojson.Unmarshal(cfg.Container, ctr); err != nil {
		return fail(err)
	}
	ctx := context.Background()
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		return fail(err)
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: ctr})
	if err != nil {
		return fail(err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		return fail(err)
	}
	fmt.Println(sb.PodSandboxId, c.ContainerId)
	return 0
}
