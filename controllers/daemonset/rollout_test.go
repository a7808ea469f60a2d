package daemonset_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn/controllers/daemonset"
	"cairn/controllers/internal/workloadtest"
	"cairn/internal/testcluster"
	"cairn/internal/testkubelet"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
)

const changeCause = "kubernetes.io/change-cause"

var daemonSetKind = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}

// rolloutHistory is what `kubectl rollout history daemonset/agent`
// prints, one "revision|change-cause" entry per revision.
func rolloutHistory(t *testing.T, client kubernetes.Interface, ns string) string {
	t.Helper()
	viewer, err := polymorphichelpers.HistoryViewerFor(daemonSetKind, client)
	if err != nil {
		t.Fatal(err)
	}
	out, err := viewer.ViewHistory(ns, "agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`\s{2,}`).ReplaceAllString(strings.TrimSpace(out), "|")), " ")
}

// TestRolloutHistoryAndUndo is `kubectl rollout history` and `kubectl
// rollout undo` on a DaemonSet: kubectl reads its ControllerRevisions and
// undoes by patching the template with the previous revision's data.
func TestRolloutHistoryAndUndo(t *testing.T) {
	c := testcluster.New(t, 1)
	client := c.Client(0)
	ctx := context.Background()
	for _, n := range []*corev1.Node{node("n1"), node("n2")} {
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ns := workloadtest.Namespace(t, client, "history")
	if _, err := testkubelet.Start(t.Context(), client, testkubelet.Options{Namespace: ns, ReadyAfter: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	workloadtest.RunManager(t, c.AdminConfig(0), daemonset.Descriptor())
	pods := viewPods(t, client, ns)

	ds := agent(ns)
	ds.Annotations = map[string]string{changeCause: "create agent:1"}
	if _, err := client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds.Annotations[changeCause] = "image agent:2"
		ds.Spec.Template.Spec.Containers[0].Image = "agent:2"
		_, err = client.AppsV1().DaemonSets(ns).Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns)
	workloadtest.Eventually(t, 20*time.Second, "every node on agent:2", func() (bool, string) {
		got := pods.placement()
		return got == "n1=agent:2 n2=agent:2", got
	})
	if got, want := rolloutHistory(t, client, ns), "REVISION|CHANGE-CAUSE 1|create agent:1 2|image agent:2"; got != want {
		t.Fatalf("rollout history:\n%s\nwant:\n%s", got, want)
	}

	rb, err := polymorphichelpers.RollbackerFor(daemonSetKind, client)
	if err != nil {
		t.Fatal(err)
	}
	current, err := client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := rb.Rollback(current, nil, 0, cmdutil.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if msg != "rolled back" {
		t.Fatalf("rollout undo said %q", msg)
	}
	waitRolledOut(t, client, ns)
	workloadtest.Eventually(t, 20*time.Second, "every node back on agent:1", func() (bool, string) {
		got := pods.placement()
		return got == "n1=agent:1 n2=agent:1", got
	})
	if got, want := rolloutHistory(t, client, ns), "REVISION|CHANGE-CAUSE 2|image agent:2 3|create agent:1"; got != want {
		t.Fatalf("rollout history after undo:\n%s\nwant:\n%s", got, want)
	}
	after, err := client.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Three template versions so far: the undo was a template change.
	if gen := after.Annotations[appsv1.DeprecatedTemplateGeneration]; gen != "3" {
		t.Fatalf("template generation %q, want 3", gen)
	}
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Labels["pod-template-generation"] != "3" {
			t.Fatalf("pod %s labels %v, want pod-template-generation 3", p.Name, p.Labels)
		}
	}
	msg, err = rb.Rollback(after, nil, 3, cmdutil.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if want := "skipped rollback (current template already matches revision 3)"; msg != want {
		t.Fatalf("undo to the current revision said %q, want %q", msg, want)
	}
}
