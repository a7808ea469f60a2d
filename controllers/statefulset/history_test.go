package statefulset

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"cairn/controllers/internal/templatehash"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

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

// revisionChanges lists the writes to ControllerRevisions as verb:name.
func (f *fixture) revisionChanges() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource != "controllerrevisions" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		name := ""
		switch a := a.(type) {
		case k8stesting.CreateAction:
			name = a.GetObject().(*appsv1.ControllerRevision).Name
		case k8stesting.PatchAction:
			name = a.GetName()
		case k8stesting.DeleteAction:
			name = a.GetName()
		case k8stesting.GetAction:
			name = a.GetName()
		}
		out = append(out, a.GetVerb()+":"+name)
	}
	return out
}

func (f *fixture) writtenStatus() *appsv1.StatefulSetStatus {
	f.t.Helper()
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			return &a.(k8stesting.UpdateAction).GetObject().(*appsv1.StatefulSet).Status
		}
	}
	f.t.Fatal("no status written")
	return nil
}

func TestFirstSyncRecordsTheRevision(t *testing.T) {
	set := testSet(1).s
	set.Annotations = map[string]string{"kubernetes.io/change-cause": "kubectl create"}
	f := newFixture(t, set)
	f.sync()
	name := revisionName(set)
	cr, err := f.client.AppsV1().ControllerRevisions("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := templatehash.RevisionData(&set.Spec.Template)
	hash := name[len("db-"):]
	if cr.Revision != 1 || string(cr.Data.Raw) != string(data) || !metav1.IsControlledBy(cr, set) ||
		cr.Labels["app"] != "db" || cr.Labels[revisionHashLabel] != hash ||
		cr.Annotations["kubernetes.io/change-cause"] != "kubectl create" {
		t.Fatalf("revision %+v", cr)
	}
	if hash != templatehash.Revision(data, ptr.To[int32](0)) {
		t.Fatalf("name %s does not carry the hash of the data", name)
	}
	st := f.writtenStatus()
	if st.CurrentRevision != name || st.UpdateRevision != name || st.CollisionCount == nil || *st.CollisionCount != 0 {
		t.Fatalf("status %+v", st)
	}
	if p := f.createdPod("db-0"); podRevision(p) != name {
		t.Fatalf("db-0 at %s, want %s", podRevision(p), name)
	}
}

func TestRevisionNumbers(t *testing.T) {
	v1, v2 := testSet(1).s, testSet(1).image("db:2").s
	tests := []struct {
		name    string
		objs    []runtime.Object
		want    []string
		changes []string
	}{
		{"a new template is the next revision", history(testSet(1).image("db:2").at(v1).s, v1),
			[]string{revisionName(v1) + ":1", revisionName(v2) + ":2"}, []string{"create:" + revisionName(v2)}},
		{"an unchanged template makes none", history(testSet(1).image("db:2").at(v1).s, v1, v2),
			[]string{revisionName(v1) + ":1", revisionName(v2) + ":2"}, nil},
		{"a rollback renumbers the old revision", history(testSet(1).at(v1).s, v1, v2),
			[]string{revisionName(v2) + ":2", revisionName(v1) + ":3"}, []string{"patch:" + revisionName(v1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.objs...)
			f.sync()
			if got := f.revisions(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("revisions %v, want %v", got, tt.want)
			}
			if got := f.revisionChanges(); fmt.Sprint(got) != fmt.Sprint(tt.changes) {
				t.Fatalf("revision writes %v, want %v", got, tt.changes)
			}
		})
	}
}

func TestHashCollisionBumpsCollisionCount(t *testing.T) {
	set := testSet(1).s
	// Another template already holds the name this one hashes to.
	squatter := history(set, testSet(1).image("other:1").s)[1].(*appsv1.ControllerRevision)
	squatter.Name = revisionName(set)
	f := newFixture(t, set, squatter)
	f.sync()
	data, _ := templatehash.RevisionData(&set.Spec.Template)
	want := templatehash.RevisionName("db", templatehash.Revision(data, ptr.To[int32](1)))
	st := f.writtenStatus()
	if st.UpdateRevision != want || st.CollisionCount == nil || *st.CollisionCount != 1 {
		t.Fatalf("status %+v, want update revision %s and collision count 1", st, want)
	}
}

func TestHistoryIsTrimmedToTheLimit(t *testing.T) {
	sets := []*appsv1.StatefulSet{testSet(2).s, testSet(2).image("db:2").s, testSet(2).image("db:3").s,
		testSet(2).image("db:4").s, testSet(2).image("db:5").s}
	set := testSet(2).image("db:5").at(sets[3]).s
	set.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	// db-1 still runs revision 2: it stays whatever its age.
	objs := append(history(set, sets...), pod(sets[1], 1), pod(sets[3], 0))
	f := newFixture(t, objs...)
	f.sync()
	want := []string{revisionName(sets[1]) + ":2", revisionName(sets[2]) + ":3", revisionName(sets[3]) + ":4", revisionName(sets[4]) + ":5"}
	if got := f.revisions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("revisions %v, want %v (the oldest unused one deleted, one unused kept)", got, want)
	}
}

func TestOrphanRevisionsAreAdopted(t *testing.T) {
	set := testSet(1).s
	orphan := history(set, set)[1].(*appsv1.ControllerRevision)
	orphan.OwnerReferences = nil
	f := newFixture(t, set, orphan)
	f.sync()
	if got := f.revisionChanges(); fmt.Sprint(got) != "[patch:"+orphan.Name+"]" {
		t.Fatalf("revision writes %v, want the adoption only", got)
	}
	cr, err := f.client.AppsV1().ControllerRevisions("ns").Get(context.Background(), orphan.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(cr, set) {
		t.Fatalf("orphan not adopted: owners %v", cr.OwnerReferences)
	}
}

func TestLegacyAnnotationMovesToARevision(t *testing.T) {
	old := testSet(3).s
	data, _ := templatehash.RevisionData(&old.Spec.Template)
	set := testSet(3).image("db:2").partition(2).at(old).s
	set.Annotations = map[string]string{legacyRevisionAnnotation: fmt.Sprintf(`{"name":%q,"data":%s}`, revisionName(old), data)}
	f := newFixture(t, set, pod(old, 1), pod(testSet(3).image("db:2").s, 2))
	f.sync()
	want := []string{revisionName(old) + ":1", revisionName(testSet(3).image("db:2").s) + ":2"}
	if got := f.revisions(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("revisions %v, want %v", got, want)
	}
	if p := f.createdPod("db-0"); p.Spec.Containers[0].Image != "db:1" {
		t.Fatalf("db-0 recreated with %s, want the current revision's db:1", p.Spec.Containers[0].Image)
	}
	got, err := f.client.AppsV1().StatefulSets("ns").Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[legacyRevisionAnnotation]; ok {
		t.Fatal("the legacy annotation is still there")
	}
}
