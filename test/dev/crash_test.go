package dev

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn/internal/devcluster"
	"cairn/internal/privtest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestDevDownCleansUpAfterTheSupervisorCrashed: when `cairn dev` itself
// dies (kill -9), its servers and agents keep running; `cairn dev down`
// from another terminal still stops them and leaves nothing behind.
func TestDevDownCleansUpAfterTheSupervisorCrashed(t *testing.T) {
	privtest.Require(t, privtest.CapSysAdmin, privtest.CapNetAdmin, privtest.CapBPF)
	if _, err := net.InterfaceByName(devcluster.BridgeName); err == nil {
		t.Fatalf("bridge %s exists: a cairn dev cluster already runs on this machine; stop it with `cairn dev down`", devcluster.BridgeName)
	}
	c := startDev(t, cairnBinary(t), devOptions{nodes: true})
	c.eventually(2*time.Minute, "2 Ready nodes", func() (bool, string) {
		var nodes *corev1.NodeList
		err := c.do(func(cs kubernetes.Interface) error {
			var err error
			nodes, err = cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			return err
		})
		if err != nil {
			return false, err.Error()
		}
		ready := readyNodes(nodes.Items)
		return len(ready) == 2, fmt.Sprintf("ready nodes %v", ready)
	})
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.exited
	st, err := devcluster.ReadRunState(c.dir)
	if err != nil || st == nil {
		t.Fatalf("run state after the crash: %v %v", st, err)
	}
	for _, p := range st.Processes {
		if !p.Running() {
			t.Errorf("%s (pid %d) died with the supervisor", p.Name, p.PID)
		}
	}
	// Without its supervisor, the cluster takes no drill requests.
	out, err := c.command(context.Background(), "dev", "stop", "s1", "--dir", c.dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is gone") {
		t.Errorf("cairn dev stop without the supervisor: %v\n%s", err, out)
	}
	out, err = c.command(context.Background(), "dev", "down", "--dir", c.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("cairn dev down: %v\n%s", err, out)
	}
	for _, left := range leftovers(c.dir) {
		t.Error(left)
	}
	if _, err := os.Stat(devcluster.Layout{Dir: c.dir}.Control()); !os.IsNotExist(err) {
		t.Errorf("the dead supervisor's control socket outlived cairn dev down: %v", err)
	}
}
