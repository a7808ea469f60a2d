package daemonset

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"cairn/controllers/internal/templatehash"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// hashOf is the pod template hash of tds's template.
func hashOf(tds *appsv1.DaemonSet) string { return templatehash.PodTemplate(&tds.Spec.Template, nil) }

// revisionOf is the revision of tds's template, number, owned by ds, as
// the controller stores it.
func revisionOf(ds, tds *appsv1.DaemonSet, number int64) *appsv1.ControllerRevision {
	data, err := templatehash.RevisionData(&tds.Spec.Template)
	if err != nil {
		panic(err)
	}
	hash := hashOf(tds)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-" + hash, Namespace: "ns", UID: types.UID("rev-" + hash),
			Labels:            map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: hash},
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(ds, kind)},
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(number) * time.Minute))},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

// revisions lists the fixture's ControllerRevisions as name:number, by
// number.
func (f *fixture) revisions() []string {
	f.t.Helper()
	list, err := f.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Revision < list.Items[j].Revision })
	var out []string
	for _, cr := range list.Items {
		out = append(out, fmt.Sprintf("%s:%d", cr.Name, cr.Revision))
	}
	return out
}

func TestFirstSyncRecordsTheRevision(t *testing.T) {
	ds := testDS().ds
	ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "1", "kubernetes.io/change-cause": "first"}
	f := newFixture(t, ds, testNode("n1").n)
	f.sync()
	hash := hashOf(ds)
	cr, err := f.client.AppsV1().ControllerRevisions("ns").Get(context.Background(), "agent-"+hash, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := templatehash.RevisionData(&ds.Spec.Template)
	if cr.Revision != 1 || string(cr.Data.Raw) != string(data) || !metav1.IsControlledBy(cr, ds) ||
		cr.Labels["app"] != "agent" || cr.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash ||
		cr.Annotations["kubernetes.io/change-cause"] != "first" {
		t.Fatalf("revision %+v", cr)
	}
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || p.Labels[templateGenerationLabel] != "1" {
				t.Fatalf("pod labels %v", p.Labels)
			}
		}
	}
}

func TestRevisionNumbers(t *testing.T) {
	v1, v2 := testDS().ds, testDS().image("agent:2").ds
	owner := testDS().ds
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		revs []runtime.Object
		want []string
	}{
		{"a new template is the next revision", testDS().image("agent:2").ds, []runtime.Object{revisionOf(owner, v1, 1)},
			[]string{"agent-" + hashOf(v1) + ":1", "agent-" + hashOf(v2) + ":2"}},
		{"an unchanged template makes none", testDS().image("agent:2").ds, []runtime.Object{revisionOf(owner, v1, 1), revisionOf(owner, v2, 2)},
			[]string{"agent-" + hashOf(v1) + ":1", "agent-" + hashOf(v2) + ":2"}},
		{"a rollback renumbers the old revision", testDS().ds, []runtime.Object{revisionOf(owner, v1, 1), revisionOf(owner, v2, 2)},
			[]string{"agent-" + hashOf(v2) + ":2", "agent-" + hashOf(v1) + ":3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append([]runtime.Object{tt.ds}, tt.revs...)...)
			f.sync()
			if got := f.revisions(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("revisions %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUnlabelledRevisionTakesItsName(t *testing.T) {
	ds := testDS().ds
	cr := revisionOf(ds, ds, 1)
	delete(cr.Labels, appsv1.DefaultDaemonSetUniqueLabelKey)
	f := newFixture(t, ds, cr)
	f.sync()
	got, err := f.client.AppsV1().ControllerRevisions("ns").Get(context.Background(), cr.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != cr.Name {
		t.Fatalf("labels %v, want the revision's name as its hash", got.Labels)
	}
}

func TestDuplicateRevisionsAreMerged(t *testing.T) {
	ds := testDS().ds
	keep := revisionOf(ds, ds, 4)
	dup := revisionOf(ds, ds, 2)
	dup.Name, dup.UID, dup.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = "agent-dup", "dup", "dup"
	p := daemonPod(ds, ds, "n1", time.Hour)
	p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = "dup"
	f := newFixture(t, ds, testNode("n1").n, keep, dup, p)
	f.sync()
	if got := f.revisions(); fmt.Sprint(got) != fmt.Sprint([]string{keep.Name + ":4"}) {
		t.Fatalf("revisions %v, want only %s", got, keep.Name)
	}
	relabelled := false
	for _, a := range f.client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" && pa.GetName() == p.Name {
			relabelled = string(pa.GetPatch()) == fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, appsv1.DefaultDaemonSetUniqueLabelKey, hashOf(ds))
		}
	}
	if !relabelled {
		t.Fatalf("pod %s not moved to the kept revision's hash: %v", p.Name, f.client.Actions())
	}
}

func TestHistoryIsCleanedUpToTheLimit(t *testing.T) {
	var tmpl []*appsv1.DaemonSet
	for i := range 5 {
		tmpl = append(tmpl, testDS().image(fmt.Sprintf("agent:%d", i+1)).ds)
	}
	ds := testDS().image("agent:5").ds
	ds.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	objs := []runtime.Object{ds, testNode("n1").n, testNode("n2").n,
		// n1 still runs revision 2: it stays whatever its age.
		daemonPod(ds, tmpl[1], "n1", time.Hour), daemonPod(ds, tmpl[4], "n2", time.Hour)}
	for i, t := range tmpl {
		objs = append(objs, revisionOf(ds, t, int64(i+1)))
	}
	f := newFixture(t, objs...)
	f.sync()
	// As in Kubernetes, the old revision a pod runs counts toward the limit.
	want := []string{"agent-" + hashOf(tmpl[1]) + ":2", "agent-" + hashOf(tmpl[4]) + ":5"}
	if got := f.revisions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("revisions %v, want %v (the current one, and the old one a pod runs)", got, want)
	}
}

func TestHashCollisionBumpsCollisionCount(t *testing.T) {
	ds := testDS().ds
	squatter := revisionOf(ds, testDS().image("other:1").ds, 1)
	squatter.Name = "agent-" + hashOf(ds)
	f := newFixture(t, ds, testNode("n1").n, squatter)
	if err := f.dc.sync(context.Background(), "ns/agent"); err == nil {
		t.Fatal("sync succeeded over a revision name collision")
	}
	got, err := f.client.AppsV1().DaemonSets("ns").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.CollisionCount == nil || *got.Status.CollisionCount != 1 {
		t.Fatalf("collision count %v, want 1", got.Status.CollisionCount)
	}
	if got := f.changes(); len(got) != 0 {
		t.Fatalf("pods changed %v before the revision was recorded", got)
	}
}
