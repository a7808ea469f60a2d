package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"cairn/internal/devcluster"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Timeouts of the cluster's start and stop.
const (
	caTimeout    = 30 * time.Second
	nodesTimeout = 3 * time.Minute
	downTimeout  = 2 * time.Minute
)

// cluster is a running `cairn dev` and admin clients of its three API
// servers.
type cluster struct {
	bin, dir string
	log      *slog.Logger
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	topo     devcluster.Topology
	clients  []kubernetes.Interface
	// nodes are the Ready nodes' names, once waitReady has returned.
	nodes []string
}

// startCluster runs `cairn dev` on the state directory dir in the
// background, its output in dir/dev.out.
func startCluster(ctx context.Context, bin, dir string, log *slog.Logger) (*cluster, error) {
	if _, err := net.InterfaceByName(devcluster.BridgeName); err == nil {
		return nil, fmt.Errorf("podbench: bridge %s exists: a cairn dev cluster already runs on this machine; stop it with `cairn dev down`", devcluster.BridgeName)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("podbench: %w: build it with make build, or pass -cairn", err)
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return nil, err
	}
	off, err := freePortOffset()
	if err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, "dev.out"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	state := filepath.Join(dir, "state")
	c := &cluster{bin: bin, dir: state, log: log, exited: make(chan struct{}), topo: devcluster.NewTopology(off, true)}
	c.cmd = c.command(context.Background(), "dev", "--dir", state, "--port-offset", strconv.Itoa(off),
		"--write-kubeconfig", filepath.Join(dir, "kubeconfig"))
	c.cmd.Stdout, c.cmd.Stderr = out, out
	// If the benchmark dies, the supervisor still stops and sweeps.
	c.cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	log.Info("starting cairn dev", "binary", bin, "dir", state, "port-offset", off)
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("podbench: starting cairn dev: %w", err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	// Clients read the CA, which `cairn dev` creates first thing.
	ca := filepath.Join(devcluster.Layout{Dir: state}.PKI(), "ca.crt")
	err = c.poll(ctx, caTimeout, "the cluster CA", func() (bool, string) {
		_, err := os.Stat(ca)
		return err == nil, fmt.Sprint(err)
	})
	if err == nil {
		err = c.connect()
	}
	if err != nil {
		if stopErr := c.stop(); stopErr != nil {
			log.Error("stopping the cluster", "err", stopErr)
		}
		return nil, err
	}
	return c, nil
}

// connect makes one admin client per API server.
func (c *cluster) connect() error {
	for _, url := range c.topo.APIURLs() {
		cfg := devcluster.AdminConfig(c.dir, url)
		// The creators and the watch share each client's rate limit.
		cfg.QPS, cfg.Burst = 500, 1000
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("podbench: %w", err)
		}
		c.clients = append(c.clients, cs)
	}
	return nil
}

// command is a cairn command without the CAIRN_* variables of this
// environment, which would override its flags.
func (c *cluster) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "CAIRN_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	return cmd
}

// waitReady waits for both nodes to be Ready.
func (c *cluster) waitReady(ctx context.Context) error {
	started := time.Now()
	err := c.poll(ctx, nodesTimeout, fmt.Sprintf("%d Ready nodes", devcluster.NodeCount), func() (bool, string) {
		var nodes *corev1.NodeList
		err := c.do(func(cs kubernetes.Interface) error {
			var err error
			nodes, err = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		})
		if err != nil {
			return false, err.Error()
		}
		c.nodes = readyNodes(nodes.Items)
		return len(c.nodes) == devcluster.NodeCount, fmt.Sprintf("ready nodes %v", c.nodes)
	})
	if err == nil {
		c.log.Info("cluster ready", "nodes", c.nodes, "took", time.Since(started).Round(time.Millisecond))
	}
	return err
}

// do runs fn against each API server in turn until one succeeds.
func (c *cluster) do(fn func(kubernetes.Interface) error) error {
	var errs []error
	for _, cs := range c.clients {
		err := fn(cs)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// poll calls cond until it holds, giving up after timeout with the last
// state cond described, or at once if `cairn dev` exits.
func (c *cluster) poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("podbench: cairn dev exited (%v) while waiting for %s; see %s", c.waitErr, what, c.outPath())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("podbench: timed out after %s waiting for %s: %s", timeout, what, state)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("podbench: waiting for %s: %w", what, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *cluster) outPath() string { return filepath.Join(filepath.Dir(c.dir), "dev.out") }

// stop runs `cairn dev down`, which stops the servers and agents and
// removes what they made on the host, and waits for `cairn dev` to exit.
func (c *cluster) stop() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
	defer cancel()
	c.log.Info("stopping the cluster")
	if out, err := c.command(ctx, "dev", "down", "--dir", c.dir).CombinedOutput(); err != nil {
		return fmt.Errorf("podbench: cairn dev down: %v\n%s", err, out)
	}
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		return errors.New("podbench: cairn dev did not exit after `cairn dev down`")
	}
	if c.waitErr != nil {
		return fmt.Errorf("podbench: cairn dev exited with %v; see %s", c.waitErr, c.outPath())
	}
	return nil
}

// freePortOffset picks a port offset whose loopback ports are free now.
// The API servers listen on the bridge, which no one else uses.
func freePortOffset() (int, error) {
	for range 50 {
		off := 1000 + rand.IntN(8000)
		free := true
		for _, s := range devcluster.NewTopology(off, true).Servers {
			for _, a := range []string{s.StoreAddr, s.PeerAddr, s.MetricsAddr} {
				ln, err := net.Listen("tcp", a)
				if err != nil {
					free = false
					break
				}
				ln.Close()
			}
		}
		if free {
			return off, nil
		}
	}
	return 0, errors.New("podbench: no free port offset found")
}

func readyNodes(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				out = append(out, n.Name)
			}
		}
	}
	return out
}
