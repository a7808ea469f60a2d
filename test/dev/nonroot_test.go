package dev

import (
	"context"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runningMember is a member's line in `cairn dev status`.
var runningMember = regexp.MustCompile(`(?m)^s\d\s+\d+\s+running\s`)

// nobody is the user the test runs `cairn dev` as when it is root.
const nobody = 65534

// TestDevWithoutRootStartsTheServersOnlyAndSaysWhy is what a user without
// root sees: the three servers, a working API, and why there are no
// nodes.
func TestDevWithoutRootStartsTheServersOnlyAndSaysWhy(t *testing.T) {
	bin := cairnBinary(t)
	o := devOptions{}
	if os.Geteuid() == 0 {
		// Run as nobody, with a home, a state directory and a copy of the
		// binary that nobody can reach.
		home, err := os.MkdirTemp("", "cairn-dev-nobody-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		if err := os.Chmod(home, 0o755); err != nil {
			t.Fatal(err)
		}
		bin = copyExecutable(t, bin, filepath.Join(home, "cairn"))
		if err := os.Chown(home, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		o.cred, o.home = &syscall.Credential{Uid: nobody, Gid: nobody}, home
	}
	c := startDev(t, bin, o)
	c.eventually(90*time.Second, "the servers to be ready", func() (bool, string) {
		out, _ := os.ReadFile(c.outPath)
		return strings.Contains(string(out), "Cairn dev cluster running: 3 servers (state"), string(out)
	})
	out, _ := os.ReadFile(c.outPath)
	if !strings.Contains(string(out), "Starting the servers only: not running as root") {
		t.Errorf("no reason given for the missing nodes:\n%s", out)
	}

	status, err := c.command(context.Background(), "dev", "status", "--dir", c.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn dev status: %v\n%s", err, status)
	}
	for _, want := range []string{"leader", "No nodes: not running as root", "s1 ", "s2 ", "s3 "} {
		if !strings.Contains(string(status), want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	if n := len(runningMember.FindAllString(string(status), -1)); n != 3 {
		t.Errorf("%d running members in:\n%s", n, status)
	}
	// Drills work for the cluster's own user: a server comes back; there
	// are no agents to stop.
	devControl(t, c, "stop", "s3", "--kill")
	if out := devControl(t, c, "start", "s3"); !strings.Contains(out, "s3 is ready") {
		t.Errorf("cairn dev start s3 said:\n%s", out)
	}
	noAgent, err := c.command(context.Background(), "dev", "stop", "n1", "--dir", c.dir).CombinedOutput()
	if err == nil || !strings.Contains(string(noAgent), "n1 is not part of this cluster (it runs its servers only: not running as root") {
		t.Errorf("cairn dev stop n1 without agents: %v\n%s", err, noAgent)
	}
	ns, err := c.command(context.Background(), "kubectl", "--kubeconfig", filepath.Join(c.dir, "admin.kubeconfig"),
		"get", "namespace", "default", "-o", "name").Output()
	if err != nil || strings.TrimSpace(string(ns)) != "namespace/default" {
		t.Errorf("cairn kubectl get namespace: %v: %s", err, ns)
	}

	// Data survives a restart of `cairn dev`, as a real cluster's does.
	keep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept-across-restarts", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if err := c.do(func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), keep, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.down(); err != nil {
		t.Fatal(err)
	}
	o.restart = c
	again := startDev(t, bin, o)
	var got *corev1.ConfigMap
	again.eventually(90*time.Second, "the ConfigMap after a restart of cairn dev", func() (bool, string) {
		err := again.do(func(cs kubernetes.Interface) error {
			var err error
			got, err = cs.CoreV1().ConfigMaps("default").Get(context.Background(), keep.Name, metav1.GetOptions{})
			return err
		})
		return err == nil, fmt.Sprint(err)
	})
	if got.Data["k"] != "v" {
		t.Errorf("the ConfigMap came back as %v", got.Data)
	}
	if err := again.down(); err != nil {
		t.Fatal(err)
	}
	for _, left := range leftovers(c.dir) {
		t.Error(left)
	}
}

// copyExecutable copies the binary at src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
