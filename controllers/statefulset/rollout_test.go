package statefulset_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn/controllers/internal/workloadtest"
	"cairn/controllers/statefulset"
	"cairn/internal/testcluster"
	"cairn/internal/testkubelet"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/polymorphichelpers"
)

const changeCause = "kubernetes.io/change-cause"

var statefulSetKind = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}

// rolloutHistory is what `kubectl rollout history statefulset/db` prints,
// one "revision change-cause" line per revision.
func rolloutHistory(t *testing.T, client kubernetes.Interface, ns string) string {
	t.Helper()
	viewer, err := polymorphichelpers.HistoryViewerFor(statefulSetKind, client)
	if err != nil {
		t.Fatal(err)
	}
	out, err := viewer.ViewHistory(ns, "db", 0)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`\s{2,}`).ReplaceAllString(strings.TrimSpace(out), "|")), " ")
}

// TestRolloutHistoryAndUndo is `kubectl rollout history` and `kubectl
// rollout undo` on a StatefulSet: kubectl reads the set's
// ControllerRevisions, and undoes by patching the set's template with the
// previous revision's data.
func TestRolloutHistoryAndUndo(t *testing.T) {
	c := testcluster.New(t, 1)
	client := c.Client(0)
	ns := workloadtest.Namespace(t, client, "history")
	if _, err := testkubelet.Start(t.Context(), client, testkubelet.Options{Namespace: ns, ReadyAfter: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	workloadtest.RunManager(t, c.AdminConfig(0), statefulset.Descriptor())
	pods := logPods(t, client, ns)
	ctx := context.Background()

	set := dbSet(ns, 2)
	set.Annotations = map[string]string{changeCause: "create db:1"}
	if _, err := client.AppsV1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, ns)
	update(t, client, ns, func(s *appsv1.StatefulSet) {
		s.Annotations[changeCause] = "image db:2"
		s.Spec.Template.Spec.Containers[0].Image = "db:2"
	})
	waitRolledOut(t, client, ns)
	if got, want := rolloutHistory(t, client, ns), "REVISION|CHANGE-CAUSE 1|create db:1 2|image db:2"; got != want {
		t.Fatalf("rollout history:\n%s\nwant:\n%s", got, want)
	}

	rb, err := polymorphichelpers.RollbackerFor(statefulSetKind, client)
	if err != nil {
		t.Fatal(err)
	}
	current, err := client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
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
	workloadtest.Eventually(t, 20*time.Second, "pods back on db:1", func() (bool, string) {
		got := fmt.Sprint(pods.images())
		return got == "map[db-0:db:1 db-1:db:1]", got
	})
	// The first revision is the latest again, under a new number.
	if got, want := rolloutHistory(t, client, ns), "REVISION|CHANGE-CAUSE 2|image db:2 3|create db:1"; got != want {
		t.Fatalf("rollout history after undo:\n%s\nwant:\n%s", got, want)
	}
	after, err := client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revs, err := client.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[int64]string{}
	for _, cr := range revs.Items {
		names[cr.Revision] = cr.Name
	}
	if after.Status.UpdateRevision != names[3] || after.Status.CurrentRevision != names[3] {
		t.Fatalf("status revisions %s/%s, want revision 3 (%s)", after.Status.CurrentRevision, after.Status.UpdateRevision, names[3])
	}
	// kubectl recognises the set's template in the revision's data.
	msg, err = rb.Rollback(after, nil, 3, cmdutil.DryRunNone)
	if err != nil {
		t.Fatal(err)
	}
	if want := "skipped rollback (current template already matches revision 3)"; msg != want {
		t.Fatalf("undo to the current revision said %q, want %q", msg, want)
	}
}
