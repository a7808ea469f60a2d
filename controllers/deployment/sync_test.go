package deployment

import (
	"context"
	"sort"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/templatehash"
	"cairn/internal/testcluster"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fixture is a controller over a fake clientset whose informer caches are
// filled by hand.
type fixture struct {
	t      *testing.T
	client *fake.Clientset
	dc     *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	cc := controllers.NewContext(nil, client, controllers.DefaultOptions(), testcluster.Logger(), clocktesting.NewFakeClock(t0))
	t.Cleanup(cc.Shutdown)
	dc, err := New(cc)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			cc.Informers.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			dc.rsIndex.Add(o)
		}
	}
	client.ClearActions()
	return &fixture{t: t, client: client, dc: dc}
}

func (f *fixture) sync(d *appsv1.Deployment) {
	f.t.Helper()
	if err := f.dc.sync(context.Background(), d.Namespace+"/"+d.Name); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) writes(verb, resource string) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

func TestNewDeploymentCreatesItsFirstReplicaSet(t *testing.T) {
	d := testDeployment("web", 3).d
	f := newFixture(t, d)
	f.sync(d)
	creates := f.writes("create", "replicasets")
	if len(creates) != 1 {
		t.Fatalf("%d replica sets created, want 1", len(creates))
	}
	rs := creates[0].(k8stesting.CreateAction).GetObject().(*appsv1.ReplicaSet)
	hash := templatehash.PodTemplate(&d.Spec.Template, nil)
	if rs.Name != "web-"+hash || rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Spec.Template.Labels["app"] != "web" {
		t.Fatalf("replica set naming: %s labels %v selector %v", rs.Name, rs.Spec.Template.Labels, rs.Spec.Selector)
	}
	if *rs.Spec.Replicas != 3 || rs.Annotations[RevisionAnnotation] != "1" ||
		rs.Annotations[DesiredReplicasAnnotation] != "3" || rs.Annotations[MaxReplicasAnnotation] != "4" {
		t.Fatalf("replicas %d, annotations %v", *rs.Spec.Replicas, rs.Annotations)
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || !*ref.BlockOwnerDeletion {
		t.Fatalf("owner %+v", ref)
	}
	got, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[RevisionAnnotation] != "1" {
		t.Fatalf("deployment revision annotation %q, want 1", got.Annotations[RevisionAnnotation])
	}
	if c := condition(got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonNewReplicaSetCreated {
		t.Fatalf("Progressing condition %+v", c)
	}
}

func TestRollingUpdateSteps(t *testing.T) {
	one := intstr.FromInt32(1)
	tests := []struct {
		name              string
		oldSize, oldAvail int32
		newSize, newAvail int32
		wantOld, wantNew  int32
	}{
		{"surge first", 4, 4, 0, 0, 4, 1},
		{"then scale old down once new pods are available", 4, 4, 1, 1, 2, 1},
		{"wait while the new pods are not available", 3, 3, 2, 0, 3, 2},
		{"finish", 0, 0, 4, 4, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := testDeployment("web", 4).surge(one, one).d
			d := testDeployment("web", 4).surge(one, one).image("nginx:2").d
			old := rsOf(before, "old", tt.oldSize, tt.oldAvail, time.Hour)
			old.Annotations[RevisionAnnotation] = "1"
			newRS := rsOf(d, templatehash.PodTemplate(&d.Spec.Template, nil), tt.newSize, tt.newAvail, time.Minute)
			newRS.Annotations[RevisionAnnotation] = "2"
			d.Annotations = map[string]string{RevisionAnnotation: "2"}
			f := newFixture(t, d, old, newRS)
			f.sync(d)
			sizes := map[string]int32{old.Name: tt.oldSize, newRS.Name: tt.newSize}
			for _, a := range f.writes("update", "replicasets") {
				rs := a.(k8stesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
				sizes[rs.Name] = *rs.Spec.Replicas
			}
			if sizes[old.Name] != tt.wantOld || sizes[newRS.Name] != tt.wantNew {
				t.Fatalf("old %d new %d, want old %d new %d", sizes[old.Name], sizes[newRS.Name], tt.wantOld, tt.wantNew)
			}
			if n := len(f.writes("create", "replicasets")); n != 0 {
				t.Fatalf("created %d replica sets", n)
			}
		})
	}
}

func TestRecreateScalesDownBeforeCreating(t *testing.T) {
	before := testDeployment("web", 3).recreate().d
	d := testDeployment("web", 3).recreate().image("nginx:2").d
	old := rsOf(before, "old", 3, 3, time.Hour)
	f := newFixture(t, d, old)
	f.sync(d)
	if n := len(f.writes("create", "replicasets")); n != 0 {
		t.Fatal("the new replica set was created while old pods run")
	}
	ups := f.writes("update", "replicasets")
	if len(ups) != 1 || *ups[0].(k8stesting.UpdateAction).GetObject().(*appsv1.ReplicaSet).Spec.Replicas != 0 {
		t.Fatalf("old set not scaled to zero: %v", ups)
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	d := testDeployment("web", 2).d
	d.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	cur := rsOf(d, templatehash.PodTemplate(&d.Spec.Template, nil), 2, 2, 0)
	cur.Annotations[RevisionAnnotation] = "5"
	d.Annotations = map[string]string{RevisionAnnotation: "5"}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}
	objs := []runtime.Object{d, cur}
	for i, img := range []string{"a", "b", "c", "d"} {
		old := rsOf(testDeployment("web", 2).image(img).d, img, 0, 0, time.Duration(10-i)*time.Hour)
		old.Annotations[RevisionAnnotation] = string(rune('1' + i))
		objs = append(objs, old)
	}
	f := newFixture(t, objs...)
	f.sync(d)
	var deleted []string
	for _, a := range f.writes("delete", "replicasets") {
		deleted = append(deleted, a.(k8stesting.DeleteAction).GetName())
	}
	sort.Strings(deleted)
	if len(deleted) != 2 || deleted[0] != "web-a" || deleted[1] != "web-b" {
		t.Fatalf("deleted %v, want the two oldest revisions web-a and web-b", deleted)
	}
}

func TestPausedDeploymentDoesNotRollOut(t *testing.T) {
	before := testDeployment("web", 3).d
	d := testDeployment("web", 3).image("nginx:2").d
	d.Spec.Paused = true
	old := rsOf(before, "old", 3, 3, time.Hour)
	old.Annotations[RevisionAnnotation] = "1"
	f := newFixture(t, d, old)
	f.sync(d)
	if n := len(f.writes("create", "replicasets")); n != 0 {
		t.Fatal("a paused deployment created a new replica set")
	}
	got, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(got.Status, appsv1.DeploymentProgressing); c == nil || c.Reason != ReasonDeploymentPaused {
		t.Fatalf("Progressing %+v, want reason %s", c, ReasonDeploymentPaused)
	}

	resumed := got.DeepCopy()
	resumed.Spec.Paused = false
	f = newFixture(t, resumed, old)
	f.sync(resumed)
	if n := len(f.writes("create", "replicasets")); n != 1 {
		t.Fatalf("resumed deployment created %d replica sets, want 1", n)
	}
}

func TestScalingAPausedDeploymentScalesItsActiveSet(t *testing.T) {
	d := testDeployment("web", 3).d
	rs := rsOf(d, templatehash.PodTemplate(&d.Spec.Template, nil), 3, 3, time.Hour)
	rs.Annotations[RevisionAnnotation] = "1"
	d.Spec.Replicas = ptr.To[int32](5)
	d.Spec.Paused = true
	f := newFixture(t, d, rs)
	f.sync(d)
	ups := f.writes("update", "replicasets")
	if len(ups) != 1 {
		t.Fatalf("%d replica set updates, want 1", len(ups))
	}
	got := ups[0].(k8stesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
	if *got.Spec.Replicas != 5 || got.Annotations[DesiredReplicasAnnotation] != "5" || got.Annotations[MaxReplicasAnnotation] != "7" {
		t.Fatalf("replicas %d, annotations %v", *got.Spec.Replicas, got.Annotations)
	}
}
