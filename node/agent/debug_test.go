package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cairn/internal/testimage"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// checkDebug does what `kubectl debug -it POD --image=busybox
// --target=app` does, on a pod of n: it adds an ephemeral container
// through pods/ephemeralcontainers with a strategic merge patch, waits
// for it to run and attaches to its shell. The shell sees the target's
// process as its PID 1; once it exits, the ephemeral container stays
// terminated, its log stays readable, and the pod and its container run
// on untouched.
func checkDebug(t *testing.T, n *testNode) {
	ctx := context.Background()
	pods := n.client.CoreV1().Pods("default")
	n.create(t, n.pod("debugged", corev1.Container{Name: "app", Command: []string{"sleep", "3600"}}))
	n.waitPod(t, "debugged", 60*time.Second, "running", running)

	debugger := corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: testimage.BusyboxRef, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh"}, Stdin: true, TTY: true,
		},
		TargetContainerName: "app",
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": []corev1.EphemeralContainer{debugger}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Patch(ctx, "debugged", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers"); err != nil {
		t.Fatal(err)
	}
	debugRunning := func(p *corev1.Pod) bool {
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil
	}
	n.waitPod(t, "debugged", 60*time.Second, "running its debugger", debugRunning)

	s := attachTTY(t, n, "debugged", "debugger")
	s.until("the debugger's shell sees the target's process", `echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"`, "pid1=sleep 3600")
	s.exit("echo bye-$((6*7)); exit 0")

	ended := func(p *corev1.Pod) bool {
		return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Terminated != nil
	}
	got := n.waitPod(t, "debugged", 30*time.Second, "with its debugger ended", ended)
	if st := got.Status.EphemeralContainerStatuses[0]; st.State.Terminated.ExitCode != 0 || st.Ready {
		t.Errorf("the debugger's status %+v, want terminated with 0", st)
	}
	// Never restarted, whatever the pod's restart policy (Always here).
	time.Sleep(2 * time.Second)
	got, err = pods.Get(ctx, "debugged", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Status.EphemeralContainerStatuses[0]; st.State.Terminated == nil || st.RestartCount != 0 {
		t.Errorf("the debugger ran again: %+v", st)
	}
	if !running(got) || got.Status.ContainerStatuses[0].RestartCount != 0 || !podReady(got) {
		t.Errorf("the debugged pod did not run on untouched: %+v", got.Status)
	}
	logs, err := n.logs("debugged", &corev1.PodLogOptions{Container: "debugger"})
	if err != nil || !strings.Contains(logs, "bye-42") {
		t.Errorf("the debugger's log %q, err %v", logs, err)
	}
	n.delete(t, "debugged", 0)
	n.waitGone(t, "debugged", 30*time.Second)
}
