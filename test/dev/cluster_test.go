package dev

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/internal/devcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// devCluster is a `cairn dev` process and clients of its servers.
type devCluster struct {
	t        *testing.T
	bin, dir string
	outPath  string
	// cred runs the cairn commands as another user, nil as this one,
	// with home as HOME.
	cred    *syscall.Credential
	home    string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	topo    devcluster.Topology
	// clients has one client per server, in order; dead marks the
	// servers the test killed.
	clients []kubernetes.Interface
	dead    map[string]bool
	offset  int // the --port-offset it was started with
}

// devOptions say how startDev runs `cairn dev`.
type devOptions struct {
	// nodes is whether the cluster gets agents (root) or not.
	nodes bool
	// cred runs cairn as another user; home is then its HOME.
	cred *syscall.Credential
	home string
	// args are added to `cairn dev`'s.
	args []string
	// restart runs `cairn dev` again on this earlier cluster's state
	// directory and ports, instead of a fresh one.
	restart *devCluster
}

// startDev runs `cairn dev` on a fresh state directory in the background.
// Cleanup stops it with `cairn dev down` if the test has not.
func startDev(t *testing.T, bin string, o devOptions) *devCluster {
	t.Helper()
	c := &devCluster{t: t, bin: bin, dir: t.TempDir(), cred: o.cred, home: o.home, exited: make(chan struct{}), dead: map[string]bool{}}
	if o.cred != nil {
		// A state directory of the user's own.
		c.dir = filepath.Join(o.home, "state")
	}
	if o.restart != nil {
		c.dir = o.restart.dir
	}
	c.outPath = filepath.Join(t.TempDir(), "dev.out")
	out, err := os.Create(c.outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	off := freePortOffset(t, o.nodes)
	if o.restart != nil {
		off = o.restart.offset
	}
	c.offset = off
	args := append([]string{"dev", "--dir", c.dir, "--write-kubeconfig=", "--port-offset", strconv.Itoa(off)}, o.args...)
	c.cmd = c.command(context.Background(), args...)
	c.cmd.Stdout, c.cmd.Stderr = out, out
	// If the test binary dies, the supervisor still stops and sweeps.
	c.cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(c.cleanup)
	c.topo = devcluster.NewTopology(off, o.nodes)
	// Clients read the CA, which `cairn dev` creates first thing.
	c.eventually(30*time.Second, "the cluster CA", func() (bool, string) {
		_, err := os.Stat(filepath.Join(devcluster.Layout{Dir: c.dir}.PKI(), "ca.crt"))
		return err == nil, fmt.Sprint(err)
	})
	for _, url := range c.topo.APIURLs() {
		cfg := devcluster.AdminConfig(c.dir, url)
		cfg.Timeout = 3 * time.Second
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.clients = append(c.clients, cs)
	}
	return c
}

// command is a cairn command run as the cluster's user, without the
// CAIRN_* variables of the test's environment.
func (c *devCluster) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CAIRN_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	if c.home != "" {
		cmd.Env = append(cmd.Env, "HOME="+c.home)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// freePortOffset picks a port offset whose loopback ports are free now.
func freePortOffset(t *testing.T, nodes bool) int {
	t.Helper()
	for range 50 {
		off := 1000 + rand.IntN(8000)
		free := true
		for _, s := range devcluster.NewTopology(off, nodes).Servers {
			addrs := []string{s.StoreAddr, s.PeerAddr, s.MetricsAddr}
			if !nodes {
				addrs = append(addrs, s.APIAddr)
			}
			for _, a := range addrs {
				ln, err := net.Listen("tcp", a)
				if err != nil {
					free = false
					break
				}
				ln.Close()
			}
		}
		if free {
			return off
		}
	}
	t.Fatal("no free port offset found")
	return 0
}

func (c *devCluster) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// down runs `cairn dev down` and waits for the supervisor to exit.
func (c *devCluster) down() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := c.command(ctx, "dev", "down", "--dir", c.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cairn dev down: %v\n%s", err, out)
	}
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		return errors.New("cairn dev did not exit after `cairn dev down`")
	}
	if c.waitErr != nil {
		return fmt.Errorf("cairn dev exited with %v", c.waitErr)
	}
	return nil
}

func (c *devCluster) cleanup() {
	if c.running() {
		if err := c.down(); err != nil {
			c.t.Error(err)
		}
	}
	if c.t.Failed() {
		out, _ := os.ReadFile(c.outPath)
		c.t.Logf("cairn dev output:\n%s", out)
		for _, name := range devcluster.LogNames() {
			if p, _ := devcluster.LogPath(c.dir, name); fileExists(p) {
				c.t.Logf("end of %s:\n%s", p, tailFile(p, 25))
			}
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func tailFile(p string, n int) string {
	raw, err := os.ReadFile(p)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// live returns the indices of the servers the test has not killed.
func (c *devCluster) live() []int {
	var out []int
	for i, s := range c.topo.Servers {
		if !c.dead[s.Name] {
			out = append(out, i)
		}
	}
	return out
}

// do runs fn against each live server in turn until one succeeds.
func (c *devCluster) do(fn func(kubernetes.Interface) error) error {
	var errs []error
	for _, i := range c.live() {
		err := fn(c.clients[i])
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// eventually polls cond until it holds, failing the test after timeout
// with the last state cond described. It also fails at once if
// `cairn dev` exits.
func (c *devCluster) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if !c.running() {
			c.t.Fatalf("cairn dev exited (%v) while waiting for %s", c.waitErr, what)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// runClient runs a one-shot pod of the demo image that sends count GET
// requests to url, and returns its log once it has succeeded.
func (c *devCluster) runClient(name, url string, count int) string {
	c.t.Helper()
	return c.runClientRetrying(name, url, count, 30*time.Second)
}

// runClientRetrying is runClient with each failing request retried for
// retryFor; with 0, any failing request fails the pod.
func (c *devCluster) runClientRetrying(name, url string, count int, retryFor time.Duration) string {
	c.t.Helper()
	return c.runPodArgs(name, []string{"get", "--count", strconv.Itoa(count), "--retry-for", retryFor.String(), url})
}

// runPodArgs runs a pod of the demo image with args until it succeeds,
// and returns its log.
func (c *devCluster) runPodArgs(name string, args []string) string {
	c.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "client", Image: devcluster.DemoImage, ImagePullPolicy: corev1.PullNever, Args: args,
			}},
		},
	}
	err := c.do(func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		c.t.Fatalf("creating pod %s: %v", name, err)
	}
	c.eventually(90*time.Second, "pod "+name+" to succeed", func() (bool, string) {
		var p *corev1.Pod
		err := c.do(func(cs kubernetes.Interface) error {
			var err error
			p, err = cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return false, err.Error()
		}
		if p.Status.Phase == corev1.PodFailed {
			c.t.Fatalf("pod %s failed: %+v\nlog:\n%s", name, p.Status, c.kubectlLogs(name))
		}
		return p.Status.Phase == corev1.PodSucceeded, fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
	})
	return c.kubectlLogs(name)
}

// kubectlLogs reads a pod's log with `cairn kubectl logs` through a live
// server.
func (c *devCluster) kubectlLogs(pod string) string {
	c.t.Helper()
	var errs []string
	for _, i := range c.live() {
		out, err := c.command(context.Background(), "kubectl", "--kubeconfig", devcluster.Layout{Dir: c.dir}.Kubeconfig(),
			"--server", c.topo.Servers[i].APIURL(), "logs", pod).CombinedOutput()
		if err == nil {
			return string(out)
		}
		errs = append(errs, fmt.Sprintf("%v: %s", err, out))
	}
	c.t.Fatalf("cairn kubectl logs %s: %s", pod, strings.Join(errs, "; "))
	return ""
}
