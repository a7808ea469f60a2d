// Package critest starts a private containerd for a test: its own socket,
// root, state and CNI config directory under a fresh directory, the
// configuration of hack/containerd, and its own network namespace, so the
// CNI bridge, its iptables rules and the pods' veths never touch the host.
// The test's images are imported offline with `ctr images import`. At the
// end of the test the pods are removed, containerd and its shims stopped,
// and every mount, cgroup and file it left behind removed.
//
// It needs root and Debian's containerd, runc and containernetworking-
// plugins; without them the test skips, or fails under
// CAIRN_REQUIRE_PRIVILEGED=1.
package critest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ctrdconf "cairn/hack/containerd"
	"cairn/internal/privtest"
	"cairn/internal/testimage"
	"cairn/node/runtime/cri"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Namespace is the containerd namespace the CRI plugin uses.
const Namespace = "k8s.io"

// CNIBinDir is where Debian's containernetworking-plugins install.
const CNIBinDir = "/usr/lib/cni"

// startTimeout bounds containerd's start; it is usually under a second.
const startTimeout = 30 * time.Second

// Containerd is a running private containerd.
type Containerd struct {
	// Prefix holds everything containerd writes.
	Prefix string
	// Socket is the CRI endpoint, unix:///....
	Socket string
	// CNIConfDir is containerd's CNI conf_dir.
	CNIConfDir string
	// CgroupParent is a cgroup of this test's own for pods' cgroups
	// (LinuxPodSandboxConfig.CgroupParent); it is removed at the end.
	CgroupParent string
	// NetNS is the path of containerd's network namespace, where the pod
	// bridge lives.
	NetNS string

	t       testing.TB
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool
}

// Start starts containerd with the pause image imported and registers
// its teardown with t.Cleanup.
func Start(t testing.TB) *Containerd {
	t.Helper()
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin)
	for _, tool := range []string{"containerd", "ctr", "runc", "containerd-shim-runc-v2"} {
		if _, err := exec.LookPath(tool); err != nil {
			privtest.Unavailable(t, "%s is not installed (apt-get install containerd runc containernetworking-plugins)", tool)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join(CNIBinDir, plugin)); err != nil {
			privtest.Unavailable(t, "CNI plugin %s is not in %s (apt-get install containernetworking-plugins)", plugin, CNIBinDir)
		}
	}
	// A short prefix: containerd's sockets must fit in a sockaddr_un.
	prefix, err := os.MkdirTemp("", "cairn-ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Containerd{
		Prefix:       prefix,
		Socket:       "unix://" + filepath.Join(prefix, ctrdconf.SocketFile),
		CNIConfDir:   filepath.Join(prefix, ctrdconf.CNIConfDir),
		CgroupParent: "/" + filepath.Base(prefix),
		t:            t,
		exited:       make(chan struct{}),
	}
	t.Cleanup(c.Stop)
	if err := os.MkdirAll(c.CNIConfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(prefix, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(ctrdconf.Render(prefix, testimage.PauseRef)), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(prefix, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	c.cmd = exec.Command("containerd", "--config", cfgPath)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("critest: starting containerd: %v", err)
	}
	c.NetNS = fmt.Sprintf("/proc/%d/ns/net", c.cmd.Process.Pid)
	go func() {
		c.cmd.Wait()
		close(c.exited)
	}()
	// containerd's streaming server (exec, port-forward) listens on
	// loopback, which a new namespace has down.
	if err := c.InNetNS(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(lo)
	}); err != nil {
		t.Fatalf("critest: bringing up loopback in containerd's network namespace: %v", err)
	}
	c.waitReady()
	pause, _ := testimage.Pause(t)
	c.Import(pause)
	return c
}

// waitReady waits until containerd answers CRI calls.
func (c *Containerd) waitReady() {
	c.t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-c.exited:
			c.t.Fatalf("critest: containerd exited at start:\n%s", c.Log())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		rt, err := cri.New(ctx, cri.Config{Socket: c.Socket, ConnectTimeout: time.Second})
		cancel()
		if err == nil {
			rt.Close()
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("critest: containerd not ready after %v: %v\n%s", startTimeout, err, c.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Runtime returns a CRI runtime connected to this containerd, writing its
// CNI configuration to CNIConfDir, closed at the end of the test.
func (c *Containerd) Runtime() *cri.Runtime {
	c.t.Helper()
	rt, err := cri.New(context.Background(), cri.Config{
		Socket: c.Socket, CNIConfDir: c.CNIConfDir, NetNS: c.NetNS,
		CNI: cri.CNIConfig{IPAMDataDir: filepath.Join(c.Prefix, "cni", "ipam")},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { rt.Close() })
	return rt
}

// Import imports an image archive (OCI layout or docker-archive tar) into
// the CRI plugin's namespace.
func (c *Containerd) Import(tarPath string) {
	c.t.Helper()
	out, err := c.ctr("images", "import", tarPath)
	if err != nil {
		c.t.Fatalf("critest: ctr images import %s: %v\n%s", tarPath, err, out)
	}
}

// ctr runs ctr against this containerd.
func (c *Containerd) ctr(args ...string) ([]byte, error) {
	args = append([]string{"--address", strings.TrimPrefix(c.Socket, "unix://"), "--namespace", Namespace}, args...)
	return exec.Command("ctr", args...).CombinedOutput()
}

// Log returns the end of containerd's log, for failure messages.
func (c *Containerd) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.Prefix, "containerd.log"))
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// InNetNS runs f with the calling goroutine's thread in containerd's
// network namespace, where the pods' IPs are reachable.
func (c *Containerd) InNetNS(f func() error) error {
	fd, err := os.Open(c.NetNS)
	if err != nil {
		return err
	}
	defer fd.Close()
	errc := make(chan error, 1)
	go func() {
		// The thread is never unlocked: it ends with the goroutine rather
		// than run other goroutines in the wrong namespace.
		runtime.LockOSThread()
		if err := unix.Setns(int(fd.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	return <-errc
}

// Stop removes the pods, stops containerd and its shims, and removes what
// they left. It runs at cleanup; calling it earlier is fine.
func (c *Containerd) Stop() {
	if c.stopped || c.cmd == nil || c.cmd.Process == nil {
		c.removeAll()
		return
	}
	c.stopped = true
	select {
	case <-c.exited:
	default:
		c.removePods()
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
			<-c.exited
		}
	}
	c.killShims()
	c.removeAll()
}

// removePods stops and removes every sandbox through CRI, which also ends
// their shims and unmounts their rootfs and network namespaces.
func (c *Containerd) removePods() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := cri.New(ctx, cri.Config{Socket: c.Socket, ConnectTimeout: time.Second})
	if err != nil {
		return
	}
	defer rt.Close()
	pods, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			c.t.Logf("critest: stopping sandbox %s: %v", p.Id, err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			c.t.Logf("critest: removing sandbox %s: %v", p.Id, err)
		}
	}
}

// killShims kills the shims this containerd started that are still
// there: they outlive containerd by design. They are found by the socket
// they were given, which only this containerd has.
func (c *Containerd) killShims() {
	needle := []byte(strings.TrimPrefix(c.Socket, "unix://") + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte("containerd-shim")) || !bytes.Contains(cmdline, needle) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeAll unmounts whatever is still mounted under Prefix, deepest
// first, removes the test's cgroups and then Prefix.
func (c *Containerd) removeAll() {
	if c.Prefix == "" {
		return
	}
	mounts, err := mountsUnder(c.Prefix)
	if err != nil {
		c.t.Logf("critest: %v", err)
	}
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			c.t.Logf("critest: unmounting %s: %v", m, err)
		}
	}
	removeCgroups(c.CgroupParent)
	if err := os.RemoveAll(c.Prefix); err != nil {
		c.t.Logf("critest: %v", err)
	}
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append(out, fields[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out, sc.Err()
}

// removeCgroups removes parent and the cgroups under it in every
// hierarchy, children first. A cgroup still holding a process stays.
func removeCgroups(parent string) {
	if parent == "" || parent == "/" {
		return
	}
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, root := range roots {
		dir := filepath.Join(root, parent)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
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
