package statefulset

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/internal/testcluster"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// sb builds test StatefulSets.
type sb struct{ s *appsv1.StatefulSet }

func testSet(replicas int32) sb {
	lbl := map[string]string{"app": "db"}
	return sb{&appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "db-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas), ServiceName: "db-hl",
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "db:1"}}},
			},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
		},
	}}
}

func (b sb) parallel() sb { b.s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement; return b }
func (b sb) onDelete() sb {
	b.s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	return b
}
func (b sb) partition(p int32) sb {
	b.s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(p)
	return b
}
func (b sb) image(img string) sb { b.s.Spec.Template.Spec.Containers[0].Image = img; return b }
func (b sb) claim(name string) sb {
	b.s.Spec.VolumeClaimTemplates = append(b.s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name}})
	return b
}

// at makes b's status name the revision of old's template as current;
// the fixture needs that revision too (history).
func (b sb) at(old *appsv1.StatefulSet) sb {
	b.s.Status.CurrentRevision = revisionName(old)
	return b
}

// revisionName is the name of the revision of set's template.
func revisionName(set *appsv1.StatefulSet) string {
	cr, err := newRevision(set, 1, 0)
	if err != nil {
		panic(err)
	}
	return cr.Name
}

// history returns set and the ControllerRevisions of set holding the
// templates of sets, numbered from 1 in that order, as the controller
// would have stored them.
func history(set *appsv1.StatefulSet, sets ...*appsv1.StatefulSet) []runtime.Object {
	objs := []runtime.Object{set}
	for i, s := range sets {
		owner := set.DeepCopy()
		owner.Spec.Template = s.Spec.Template
		cr, err := newRevision(owner, int64(i+1), 0)
		if err != nil {
			panic(err)
		}
		cr.UID = types.UID(cr.Name)
		cr.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
		objs = append(objs, cr)
	}
	return objs
}

// pod returns the healthy pod of ordinal made from set's template.
func pod(set *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	p := newPod(set, &set.Spec.Template, revisionName(set), ordinal)
	p.UID = types.UID(p.Name)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}}
	return p
}

func pending(p *corev1.Pod) *corev1.Pod {
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return p
}

type fixture struct {
	t      *testing.T
	client *fake.Clientset
	sc     *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	cc := controllers.NewContext(nil, client, controllers.DefaultOptions(), testcluster.Logger(), clocktesting.NewFakeClock(t0))
	t.Cleanup(cc.Shutdown)
	sc, err := New(cc)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			cc.Informers.Apps().V1().StatefulSets().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			sc.podIndex.Add(o)
		case *appsv1.ControllerRevision:
			sc.revIndex.Add(o)
		}
	}
	client.ClearActions()
	return &fixture{t: t, client: client, sc: sc}
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.sc.sync(context.Background(), "ns/db"); err != nil {
		f.t.Fatal(err)
	}
}

// changes lists pod creations (+name) and deletions (-name), in order.
func (f *fixture) changes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a.GetVerb() {
		case "create":
			out = append(out, "+"+a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).Name)
		case "delete":
			out = append(out, "-"+a.(k8stesting.DeleteAction).GetName())
		}
	}
	return out
}

func (f *fixture) createdPod(name string) *corev1.Pod {
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			if p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod); p.Name == name {
				return p
			}
		}
	}
	f.t.Fatalf("pod %s not created", name)
	return nil
}

func TestPodManagement(t *testing.T) {
	three := testSet(3).s
	one := testSet(1).s
	two := testSet(2).s
	tests := []struct {
		name string
		set  *appsv1.StatefulSet
		pods []*corev1.Pod
		want []string
	}{
		{"ordered: first pod alone", three, nil, []string{"+db-0"}},
		{"ordered: next once the previous is ready", three, []*corev1.Pod{pod(three, 0)}, []string{"+db-1"}},
		{"ordered: wait for a pending pod", three, []*corev1.Pod{pending(pod(three, 0))}, nil},
		{"ordered: a gap is filled first", three, []*corev1.Pod{pod(three, 0), pod(three, 2)}, []string{"+db-1"}},
		{"parallel: all at once", testSet(3).parallel().s, nil, []string{"+db-0", "+db-1", "+db-2"}},
		{"ordered: scale down the highest first", one, []*corev1.Pod{pod(one, 0), pod(one, 1), pod(one, 2)}, []string{"-db-2"}},
		{"ordered: scale down waits for the kept pods to be healthy", two, []*corev1.Pod{pending(pod(two, 0)), pod(two, 1), pod(two, 2)}, nil},
		{"ordered: an unhealthy condemned pod may go first", one, []*corev1.Pod{pod(one, 0), pod(one, 1), pending(pod(one, 2))}, []string{"-db-2"}},
		{"parallel: scale down at once", testSet(1).parallel().s, []*corev1.Pod{pod(one, 0), pod(one, 1), pod(one, 2)}, []string{"-db-1", "-db-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.set}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			f := newFixture(t, objs...)
			f.sync()
			got := f.changes()
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("pod changes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodIdentityAndClaims(t *testing.T) {
	set := testSet(1).claim("data").s
	f := newFixture(t, set)
	f.sync()
	p := f.createdPod("db-0")
	if p.Spec.Hostname != "db-0" || p.Spec.Subdomain != "db-hl" ||
		p.Labels[appsv1.StatefulSetPodNameLabel] != "db-0" || p.Labels[appsv1.PodIndexLabel] != "0" ||
		p.Labels[appsv1.ControllerRevisionHashLabelKey] != revisionName(set) || p.GenerateName != "" {
		t.Fatalf("pod identity: hostname %q subdomain %q labels %v", p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-0" {
		t.Fatalf("volumes %+v", p.Spec.Volumes)
	}
	c, err := f.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("claim data-db-0: %v", err)
	}
	if c.Labels["app"] != "db" {
		t.Fatalf("claim labels %v", c.Labels)
	}
}

func TestRollingUpdate(t *testing.T) {
	old := testSet(3).s
	oldPods := func() []runtime.Object {
		return []runtime.Object{pod(old, 0), pod(old, 1), pod(old, 2)}
	}
	tests := []struct {
		name string
		set  *appsv1.StatefulSet
		pods []runtime.Object
		want []string
	}{
		{"highest ordinal first", testSet(3).image("db:2").at(old).s, oldPods(), []string{"-db-2"}},
		{"partition holds lower ordinals", testSet(3).image("db:2").partition(2).at(old).s,
			[]runtime.Object{pod(old, 0), pod(old, 1), pod(testSet(3).image("db:2").s, 2)}, nil},
		{"on delete leaves pods alone", testSet(3).image("db:2").onDelete().at(old).s, oldPods(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append(history(tt.set, old, tt.set), tt.pods...)...)
			f.sync()
			if got := f.changes(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("pod changes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRecreatedPodsTakeTheirRevision(t *testing.T) {
	old := testSet(3).s
	newSet := testSet(3).image("db:2").s
	tests := []struct {
		name      string
		set       *appsv1.StatefulSet
		wantImage string
		wantRev   string
	}{
		{"below the partition: current revision", testSet(3).image("db:2").partition(2).at(old).s, "db:1", revisionName(old)},
		{"on delete: update revision", testSet(3).image("db:2").onDelete().at(old).s, "db:2", revisionName(newSet)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// db-0 was deleted by hand; db-1 and db-2 remain.
			f := newFixture(t, append(history(tt.set, old, newSet), pod(old, 1), pod(newSet, 2))...)
			f.sync()
			p := f.createdPod("db-0")
			if img := p.Spec.Containers[0].Image; img != tt.wantImage || podRevision(p) != tt.wantRev {
				t.Fatalf("db-0 recreated with %s at %s, want %s at %s", img, podRevision(p), tt.wantImage, tt.wantRev)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	old := testSet(3).s
	set := testSet(3).image("db:2").partition(1).at(old).s
	set.Generation = 4
	f := newFixture(t, append(history(set, old, set), pod(old, 0), pod(testSet(3).image("db:2").s, 1), pending(pod(testSet(3).image("db:2").s, 2)))...)
	f.sync()
	var st *appsv1.StatefulSetStatus
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			st = &a.(k8stesting.UpdateAction).GetObject().(*appsv1.StatefulSet).Status
		}
	}
	if st == nil {
		t.Fatal("no status written")
	}
	if st.Replicas != 3 || st.ReadyReplicas != 2 || st.AvailableReplicas != 2 || st.CurrentReplicas != 1 || st.UpdatedReplicas != 2 ||
		st.ObservedGeneration != 4 || st.CurrentRevision != set.Status.CurrentRevision || st.UpdateRevision != revisionName(set) {
		t.Fatalf("status %+v", st)
	}
}
