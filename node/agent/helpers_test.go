package agent_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/rootcacert"
	"cairn/controllers/serviceaccount"
	"cairn/internal/privtest"
	"cairn/internal/testcluster"
	"cairn/internal/testimage"
	"cairn/internal/testport"
	"cairn/node/agent"
	"cairn/node/images"
	"cairn/node/kubelet"
	"cairn/node/network"
	"cairn/node/runtime/cri/critest"
	"cairn/node/runtime/embedded"
	"cairn/node/runtime/embedded/shimtest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	embedded.MaybeRunInit()
	os.Exit(m.Run())
}

// testNode is a real control plane and one agent, in a network
// namespace of its own, with the test images imported.
type testNode struct {
	t       testing.TB
	cluster *testcluster.Cluster
	client  kubernetes.Interface
	cfg     agent.Config
	netns   string
	stop    context.CancelFunc
	done    chan error
}

const podCIDR = "10.98.1.0/24"

// newTestNode starts a one-replica control plane and an agent on the
// embedded runtime, in a network namespace of its own.
func newTestNode(t testing.TB) *testNode {
	t.Helper()
	return newEmbeddedNode(t, 1)
}

// newEmbeddedNode is newTestNode with a control plane of replicas
// replicas; the agent is given every API server.
func newEmbeddedNode(t testing.TB, replicas int) *testNode {
	t.Helper()
	return startTestNode(t, embeddedConfig(t), replicas)
}

// embeddedConfig prepares an agent on the embedded runtime: a network
// namespace and a data directory with the test images imported.
func embeddedConfig(t testing.TB) agent.Config {
	t.Helper()
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin)
	dir := t.TempDir()
	netns := filepath.Join(dir, "netns")
	if err := network.NewNetNS(netns); err != nil {
		privtest.Unavailable(t, "cannot create a network namespace: %v", err)
	}
	// Unmounted even if the node never starts, or the temporary
	// directory could not be removed.
	t.Cleanup(func() { network.RemoveNetNS(netns) })
	dataDir := filepath.Join(dir, "agent")
	store, err := images.Open(images.Config{Dir: images.Dir(dataDir)})
	if err != nil {
		t.Fatal(err)
	}
	for _, build := range []func(testing.TB) (string, string){testimage.Busybox, testimage.HTTPServer} {
		tarPath, _ := build(t)
		if _, err := store.Import(context.Background(), tarPath); err != nil {
			t.Fatal(err)
		}
	}
	return agent.Config{Runtime: agent.RuntimeEmbedded, DataDir: dataDir, NetNS: netns, ShimBinary: shimtest.Binary(t)}
}

// containerdConfig prepares an agent on a private containerd, through
// CRI, with the test images imported.
func containerdConfig(t testing.TB) agent.Config {
	t.Helper()
	ctrd := critest.Start(t)
	for _, build := range []func(testing.TB) (string, string){testimage.Busybox, testimage.HTTPServer} {
		tarPath, _ := build(t)
		ctrd.Import(tarPath)
	}
	return agent.Config{Runtime: agent.RuntimeCRI, CRISocket: ctrd.Socket, CNIConfDir: ctrd.CNIConfDir,
		NetNS: ctrd.NetNS, CgroupRoot: ctrd.CgroupParent, DataDir: filepath.Join(t.TempDir(), "agent")}
}

// newContainerdNode starts a control plane and an agent on a private
// containerd, through CRI.
func newContainerdNode(t testing.TB) *testNode {
	t.Helper()
	return startTestNode(t, containerdConfig(t), 1)
}

// startTestNode completes base (runtime, data dir, network namespace)
// into an agent configuration, starts a control plane of replicas
// replicas and the agent, and gives the node its podCIDR.
func startTestNode(t testing.TB, base agent.Config, replicas int) *testNode {
	t.Helper()
	c := testcluster.New(t, replicas)
	c.EnableKubeletClient()
	return startTestNodeOn(t, c, base, podCIDR)
}

// identityControllers holds the clusters runPodIdentityControllers
// started them for.
var identityControllers sync.Map

// runPodIdentityControllers runs, once per cluster, the controllers that
// pods' service account volumes wait for, as a server's controller
// manager does: the default service accounts and the kube-root-ca.crt
// ConfigMaps.
func runPodIdentityControllers(t testing.TB, c *testcluster.Cluster) {
	if _, started := identityControllers.LoadOrStore(c, true); started {
		return
	}
	m := controllers.Manager{
		Descriptors: []controllers.Descriptor{serviceaccount.Descriptor(), rootcacert.Descriptor()},
		Logger:      testcluster.Logger(),
	}
	cfg := c.AdminConfig(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		<-done
		identityControllers.Delete(c)
	})
}

// startTestNodeOn starts an agent of base on the running cluster c, and
// gives its node the pod range cidr.
func startTestNodeOn(t testing.TB, c *testcluster.Cluster, base agent.Config, cidr string, opts ...func(*agent.Config)) *testNode {
	t.Helper()
	runPodIdentityControllers(t, c)
	replicas := c.Size()
	n := &testNode{t: t, cluster: c, client: c.Client(0), netns: base.NetNS}
	ctx := context.Background()
	ports, err := testport.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(ports[0], ":")
	kport, _ := strconv.Atoi(port)
	var b [3]byte
	rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("CAIRN_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n.cfg = base
	for i := range replicas {
		n.cfg.Servers = append(n.cfg.Servers, c.URL(i))
	}
	n.cfg.PKIDir = filepath.Join(c.Dir(), "pki")
	n.cfg.NodeName, n.cfg.NodeIP = "n-"+suffix, []byte{127, 0, 0, 1}
	n.cfg.KubeletAddress, n.cfg.KubeletPort = "127.0.0.1", kport
	n.cfg.ClusterCIDR, n.cfg.Logger = "10.98.0.0/16", log
	if n.cfg.CgroupRoot == "" {
		n.cfg.CgroupRoot = "/cairn-test-" + suffix
	}
	n.cfg.Kubelet = kubelet.Config{
		NodeLabels:                map[string]string{"example.com/pool": "test"},
		Taints:                    []corev1.Taint{{Key: "example.com/test", Effect: corev1.TaintEffectPreferNoSchedule}},
		NodeStatusUpdateFrequency: time.Second, NodeLeaseRenewInterval: time.Second,
		PodResyncInterval: 200 * time.Millisecond, SyncFrequency: time.Second, HousekeepingInterval: time.Second,
		CrashLoopBackOff:    kubelet.BackoffConfig{Base: time.Second, Max: 4 * time.Second},
		ContainerLogMaxSize: 64 << 10, ContainerLogMaxFiles: 3,
	}
	for _, opt := range opts {
		opt(&n.cfg)
	}
	t.Cleanup(n.cleanup)
	n.start()
	n.waitNode(t, func(node *corev1.Node) bool { return node.UID != "" })
	// The nodeipam controller's part: give the node its podCIDR. A
	// patch, since the agent may be writing the Node meanwhile.
	patch := fmt.Sprintf(`{"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, cidr, cidr)
	if _, err := n.client.CoreV1().Nodes().Patch(ctx, n.cfg.NodeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitNode(t, nodeReady)
	return n
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// start runs the agent, as `cairn agent` does.
func (n *testNode) start() {
	ctx, cancel := context.WithCancel(context.Background())
	n.stop, n.done = cancel, make(chan error, 1)
	go func() { n.done <- agent.Run(ctx, n.cfg) }()
}

// halt stops the agent; its pods keep running.
func (n *testNode) halt(t testing.TB) {
	t.Helper()
	n.stop()
	select {
	case err := <-n.done:
		if err != nil {
			t.Fatalf("agent: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s")
	}
	n.stop = nil
}

// cleanup deletes the pods so the agent stops them, then removes
// whatever is left with a runtime of its own, so no container outlives
// the test even after a failure.
func (n *testNode) cleanup() {
	ctx := context.Background()
	if n.stop != nil {
		pods, _ := n.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		for _, p := range pods.Items {
			n.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
		// The agent cleans up after pods gone from the API.
		podsDir := filepath.Join(n.cfg.DataDir, "kubelet", "pods")
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if entries, err := os.ReadDir(podsDir); err == nil && len(entries) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		n.stop()
		<-n.done
	}
	if n.cfg.Runtime == agent.RuntimeCRI {
		return // critest removes what containerd made
	}
	store, err := images.Open(images.Config{Dir: images.Dir(n.cfg.DataDir)})
	if err == nil {
		rt, err := embedded.New(embedded.Config{StateDir: filepath.Join(n.cfg.DataDir, "runtime"), NodeName: n.cfg.NodeName,
			CgroupRoot: n.cfg.CgroupRoot, Images: store})
		if err == nil {
			sbs, _ := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
			for _, sb := range sbs.GetItems() {
				if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
					n.t.Errorf("cleanup: %v", err)
				}
			}
		}
	}
	if pn, err := network.New(network.Config{NetNS: n.netns, StateDir: filepath.Join(n.cfg.DataDir, "network")}); err == nil {
		pn.Teardown()
		pn.Close()
	}
	network.RemoveNetNS(n.netns)
	// The runtime's default directory of sandbox namespaces.
	os.Remove(filepath.Join("/run/cairn/netns", n.cfg.NodeName))
	removeCgroup(n.cfg.CgroupRoot)
	unmountUnder(n.cfg.DataDir)
}

// unmountUnder unmounts what a failed test left mounted in dir (volume
// tmpfs), so its temporary directory can be removed.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			points = append(points, f[4])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		unix.Unmount(points[i], unix.MNT_DETACH)
	}
}

// removeCgroup removes the test's cgroup root from every hierarchy.
func removeCgroup(rel string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, r := range roots {
		dir := filepath.Join(r, rel)
		// Deepest first: a cgroup goes only once its children have.
		var dirs []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			os.Remove(dirs[i])
		}
	}
}

func (n *testNode) waitNode(t testing.TB, cond func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	var last *corev1.Node
	eventually(t, 30*time.Second, "node "+n.cfg.NodeName, func() bool {
		node, err := n.client.CoreV1().Nodes().Get(context.Background(), n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = node
		return cond(node)
	}, func() any { return last })
	return last
}

// pod is a pod bound to the test node, in the default namespace.
func (n *testNode) pod(name string, containers ...corev1.Container) *corev1.Pod {
	for i := range containers {
		if containers[i].Image == "" {
			containers[i].Image = testimage.BusyboxRef
		}
		containers[i].ImagePullPolicy = corev1.PullIfNotPresent
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeName: n.cfg.NodeName, Containers: containers,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
		},
	}
}

func (n *testNode) create(t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := n.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitPod waits for the pod to meet cond and returns it.
func (n *testNode) waitPod(t testing.TB, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	eventually(t, timeout, "pod "+name+" "+what, func() bool {
		p, err := n.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = p
		return cond(p)
	}, func() any {
		if last == nil {
			return nil
		}
		return last.Status
	})
	return last
}

func (n *testNode) waitGone(t testing.TB, name string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "pod "+name+" deleted", func() bool {
		_, err := n.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, func() any { return nil })
}

func (n *testNode) delete(t testing.TB, name string, grace int64) {
	t.Helper()
	err := n.client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// logs reads a container's log through the API server's pods/log.
func (n *testNode) logs(name string, opts *corev1.PodLogOptions) (string, error) {
	b, err := n.client.CoreV1().Pods("default").GetLogs(name, opts).Do(context.Background()).Raw()
	return string(b), err
}

func running(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool, last func() any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last seen: %+v", what, timeout, last())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
