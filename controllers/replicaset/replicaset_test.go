package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"cairn/controllers"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"cairn/internal/testcluster"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// rsb builds test ReplicaSets.
type rsb struct{ rs *appsv1.ReplicaSet }

func testRS(name string, replicas int32) rsb {
	lbl := map[string]string{"app": name}
	return rsb{&appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}}
}

func (b rsb) minReady(s int32) rsb { b.rs.Spec.MinReadySeconds = s; return b }

// pb builds test pods.
type pb struct{ p *corev1.Pod }

func testPod(name string) pb {
	return pb{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		Labels:            map[string]string{"app": "web", "tier": "front"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}}
}

func (b pb) of(rs *appsv1.ReplicaSet) pb {
	b.p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, kind)}
	return b
}
func (b pb) labels(l map[string]string) pb { b.p.Labels = l; return b }
func (b pb) node(n string) pb              { b.p.Spec.NodeName = n; return b }
func (b pb) created(ago time.Duration) pb {
	b.p.CreationTimestamp = metav1.NewTime(t0.Add(-ago))
	return b
}
func (b pb) running() pb { b.p.Status.Phase = corev1.PodRunning; return b }
func (b pb) readySince(ago time.Duration) pb {
	b.p.Status.Phase = corev1.PodRunning
	b.p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t0.Add(-ago))}}
	return b
}

// fixture is a controller over a fake clientset whose informer caches are
// filled by hand, so each sync sees exactly the given objects.
type fixture struct {
	t      *testing.T
	client *fake.Clientset
	rc     *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	// The fake tracker does not generate names.
	n := 0
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			n++
			pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, n)
		}
		return false, nil, nil
	})
	cc := controllers.NewContext(nil, client, controllers.DefaultOptions(), testcluster.Logger(), clocktesting.NewFakeClock(t0))
	t.Cleanup(cc.Shutdown)
	rc, err := New(cc)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.ReplicaSet:
			rc.rsIndex.Add(o)
		case *corev1.Pod:
			rc.podIndex.Add(o)
		}
	}
	client.ClearActions()
	return &fixture{t: t, client: client, rc: rc}
}

func (f *fixture) sync(rs *appsv1.ReplicaSet) error {
	f.t.Helper()
	return f.rc.sync(context.Background(), rs.Namespace+"/"+rs.Name)
}

// actions returns the verb/resource[/subresource] of every write.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetResource().Resource != "events" {
			out = append(out, a)
		}
	}
	return out
}

func (f *fixture) created() []*corev1.Pod {
	var out []*corev1.Pod
	for _, a := range f.writes() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			out = append(out, a.(k8stesting.CreateAction).GetObject().(*corev1.Pod))
		}
	}
	return out
}

func (f *fixture) deleted() []string {
	var out []string
	for _, a := range f.writes() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			out = append(out, a.(k8stesting.DeleteAction).GetName())
		}
	}
	sort.Strings(out)
	return out
}

func (f *fixture) status() appsv1.ReplicaSetStatus {
	f.t.Helper()
	var st *appsv1.ReplicaSetStatus
	for _, a := range f.writes() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			st = &a.(k8stesting.UpdateAction).GetObject().(*appsv1.ReplicaSet).Status
		}
	}
	if st == nil {
		f.t.Fatal("no status update")
	}
	return *st
}

func TestSyncCreatesMissingPodsWithControllerRefs(t *testing.T) {
	rs := testRS("web", 3).rs
	f := newFixture(t, rs)
	if err := f.sync(rs); err != nil {
		t.Fatal(err)
	}
	created := f.created()
	if len(created) != 3 {
		t.Fatalf("created %d pods, want 3", len(created))
	}
	for _, p := range created {
		ref := metav1.GetControllerOf(p)
		if p.GenerateName != "web-" || ref == nil || ref.UID != rs.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) ||
			ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || p.Labels["tier"] != "front" {
			t.Fatalf("pod %+v", p.ObjectMeta)
		}
	}
	// The creations are not in the cache yet: a second sync must not
	// create them again.
	f.client.ClearActions()
	if err := f.sync(rs); err != nil {
		t.Fatal(err)
	}
	if n := len(f.created()); n != 0 {
		t.Fatalf("second sync before the cache caught up created %d more pods", n)
	}
}

func TestSyncDeletesTheLeastEstablishedPodsFirst(t *testing.T) {
	rs := testRS("web", 2).rs
	tests := []struct {
		name string
		pods []pb
		want []string
	}{
		{"unscheduled first", []pb{testPod("a").node("n1").readySince(time.Hour), testPod("b"), testPod("c").node("n2").readySince(time.Hour)}, []string{"b"}},
		{"pending before running", []pb{testPod("a").node("n1").readySince(time.Hour), testPod("b").node("n1"), testPod("c").node("n2").readySince(time.Hour)}, []string{"b"}},
		{"not ready before ready", []pb{testPod("a").node("n1").running(), testPod("b").node("n2").readySince(time.Hour), testPod("c").node("n3").readySince(time.Hour)}, []string{"a"}},
		{"ready most recently before long available", []pb{testPod("a").node("n1").readySince(5 * time.Second), testPod("b").node("n2").readySince(10 * time.Hour), testPod("c").node("n3").readySince(10 * time.Hour)}, []string{"a"}},
		{"doubled up before alone", []pb{testPod("a").node("n1").readySince(time.Hour), testPod("b").node("n2").readySince(time.Hour), testPod("c").node("n2").readySince(time.Hour)}, nil},
		{"newest first", []pb{testPod("a").node("n1").running().created(10 * time.Hour), testPod("b").node("n2").running().created(time.Minute), testPod("c").node("n3").running().created(10 * time.Hour)}, []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{rs}
			for _, p := range tt.pods {
				objs = append(objs, p.of(rs).p)
			}
			f := newFixture(t, objs...)
			if err := f.sync(rs); err != nil {
				t.Fatal(err)
			}
			got := f.deleted()
			if tt.want == nil {
				// Either pod of the doubled-up node n2.
				if len(got) != 1 || (got[0] != "b" && got[0] != "c") {
					t.Fatalf("deleted %v, want one of the pods on n2", got)
				}
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("deleted %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSyncAdoptsAndReleases(t *testing.T) {
	rs := testRS("web", 2).rs
	orphan := testPod("orphan").labels(map[string]string{"app": "web"}).p
	strayOwned := testPod("stray").labels(map[string]string{"app": "db"}).of(rs).p
	foreign := testPod("foreign").labels(map[string]string{"app": "web"}).p
	foreign.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "x", Controller: ptr.To(true)}}
	owned := testPod("owned").of(rs).p
	f := newFixture(t, rs, orphan, strayOwned, foreign, owned)
	if err := f.sync(rs); err != nil {
		t.Fatal(err)
	}
	patched := map[string]string{}
	for _, a := range f.writes() {
		if a.GetVerb() == "patch" {
			patched[a.(k8stesting.PatchAction).GetName()] = string(a.(k8stesting.PatchAction).GetPatch())
		}
	}
	if len(patched) != 2 || patched["orphan"] == "" || patched["stray"] == "" {
		t.Fatalf("patched %v, want the orphan adopted and the stray pod released", patched)
	}
	// owned + adopted orphan = 2 = replicas: nothing to create or delete.
	if c, d := f.created(), f.deleted(); len(c) != 0 || len(d) != 0 {
		t.Fatalf("created %d, deleted %v", len(c), d)
	}
	if st := f.status(); st.Replicas != 2 || st.FullyLabeledReplicas != 1 {
		t.Fatalf("status %+v: want 2 replicas, 1 fully labeled (the orphan lacks tier)", st)
	}
}

func TestStatusCounts(t *testing.T) {
	rs := testRS("web", 4).minReady(10).rs
	rs.Generation = 3
	f := newFixture(t, rs,
		testPod("a").of(rs).node("n1").p,
		testPod("b").of(rs).node("n1").readySince(5*time.Second).p,
		testPod("c").of(rs).node("n1").readySince(time.Minute).p,
		testPod("d").of(rs).node("n1").readySince(time.Minute).labels(map[string]string{"app": "web"}).p,
	)
	if err := f.sync(rs); err != nil {
		t.Fatal(err)
	}
	st := f.status()
	want := appsv1.ReplicaSetStatus{Replicas: 4, FullyLabeledReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 2, ObservedGeneration: 3}
	if st.Replicas != want.Replicas || st.FullyLabeledReplicas != want.FullyLabeledReplicas || st.ReadyReplicas != want.ReadyReplicas ||
		st.AvailableReplicas != want.AvailableReplicas || st.ObservedGeneration != want.ObservedGeneration {
		t.Fatalf("status %+v, want %+v", st, want)
	}
}

func TestCreateFailureSetsReplicaFailure(t *testing.T) {
	rs := testRS("web", 5).rs
	f := newFixture(t, rs)
	f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	if err := f.sync(rs); err == nil {
		t.Fatal("sync succeeded despite failing creates")
	}
	if n := len(f.created()); n != 1 {
		t.Fatalf("attempted %d creates, want 1 (slow start stops at the first failure)", n)
	}
	st := f.status()
	if len(st.Conditions) != 1 || st.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure || st.Conditions[0].Reason != ReasonFailedCreate {
		t.Fatalf("conditions %+v", st.Conditions)
	}
	// The failed and skipped creations are not awaited.
	if !f.rc.exp.Satisfied("ns/web") {
		t.Fatal("expectations still wait for creations that failed")
	}
}
