package daemonset

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"cairn/controllers"
	"cairn/controllers/internal/templatehash"
	"cairn/internal/testcluster"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// dsb builds test DaemonSets.
type dsb struct{ ds *appsv1.DaemonSet }

func testDS() dsb {
	lbl := map[string]string{"app": "agent"}
	return dsb{&appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "agent-uid", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "agent:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}},
		},
	}}
}

func (b dsb) selector(k, v string) dsb {
	b.ds.Spec.Template.Spec.NodeSelector = map[string]string{k: v}
	return b
}
func (b dsb) image(img string) dsb { b.ds.Spec.Template.Spec.Containers[0].Image = img; return b }
func (b dsb) surge(n int32) dsb {
	b.ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(n))}
	return b
}
func (b dsb) tolerate(key string, effect corev1.TaintEffect) dsb {
	b.ds.Spec.Template.Spec.Tolerations = append(b.ds.Spec.Template.Spec.Tolerations,
		corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	return b
}
func (b dsb) affinity(key string, values ...string) dsb {
	b.ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}}}}}
	return b
}

// nb builds test nodes.
type nb struct{ n *corev1.Node }

func testNode(name string) nb {
	return nb{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}}
}
func (b nb) label(k, v string) nb { b.n.Labels[k] = v; return b }
func (b nb) taint(key string, effect corev1.TaintEffect) nb {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	return b
}

// daemonPod is a running, ready pod of ds on node at the revision of
// template tds.
func daemonPod(ds, tds *appsv1.DaemonSet, node string, readyAgo time.Duration) *corev1.Pod {
	hash := templatehash.PodTemplate(&tds.Spec.Template, nil)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "agent-" + node + "-" + hash[:4], Namespace: "ns", UID: types.UID(node + hash),
			Labels:            map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: hash},
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(ds, kind)},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec: corev1.PodSpec{NodeName: node, Containers: tds.Spec.Template.Spec.Containers},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-readyAgo))}}},
	}
	return p
}

func unready(p *corev1.Pod) *corev1.Pod {
	p.Status.Conditions = nil
	return p
}

func TestShouldRun(t *testing.T) {
	tests := []struct {
		name      string
		ds        *appsv1.DaemonSet
		node      *corev1.Node
		run, keep bool
	}{
		{"plain node", testDS().ds, testNode("n").n, true, true},
		{"node selector matches", testDS().selector("disk", "ssd").ds, testNode("n").label("disk", "ssd").n, true, true},
		{"node selector does not match", testDS().selector("disk", "ssd").ds, testNode("n").n, false, false},
		{"required affinity does not match", testDS().affinity("zone", "a").ds, testNode("n").label("zone", "b").n, false, false},
		{"required affinity matches", testDS().affinity("zone", "a").ds, testNode("n").label("zone", "a").n, true, true},
		{"NoSchedule taint: none new, existing stays", testDS().ds, testNode("n").taint("dedicated", corev1.TaintEffectNoSchedule).n, false, true},
		{"NoExecute taint: none at all", testDS().ds, testNode("n").taint("dedicated", corev1.TaintEffectNoExecute).n, false, false},
		{"tolerated taint", testDS().tolerate("dedicated", corev1.TaintEffectNoSchedule).ds, testNode("n").taint("dedicated", corev1.TaintEffectNoSchedule).n, true, true},
		{"not-ready node is tolerated", testDS().ds, testNode("n").taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute).n, true, true},
		{"unreachable node is tolerated", testDS().ds, testNode("n").taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute).n, true, true},
		{"cordoned node is tolerated", testDS().ds, testNode("n").taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule).n, true, true},
		{"memory pressure is tolerated", testDS().ds, testNode("n").taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule).n, true, true},
		{"network unavailable: only host network pods", testDS().ds, testNode("n").taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule).n, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if run, keep := shouldRun(tt.node, tt.ds); run != tt.run || keep != tt.keep {
				t.Fatalf("shouldRun = %v, %v; want %v, %v", run, keep, tt.run, tt.keep)
			}
		})
	}
	hostNet := testDS().ds
	hostNet.Spec.Template.Spec.HostNetwork = true
	if run, _ := shouldRun(testNode("n").taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule).n, hostNet); !run {
		t.Fatal("a host network daemon does not tolerate network-unavailable")
	}
}

type fixture struct {
	t      *testing.T
	client *fake.Clientset
	dc     *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
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
	dc, err := New(cc)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			cc.Informers.Apps().V1().DaemonSets().Informer().GetIndexer().Add(o)
		case *corev1.Node:
			cc.Informers.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *corev1.Pod:
			dc.podIndex.Add(o)
		case *appsv1.ControllerRevision:
			dc.revIndex.Add(o)
		}
	}
	client.ClearActions()
	return &fixture{t: t, client: client, dc: dc}
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.dc.sync(context.Background(), "ns/agent"); err != nil {
		f.t.Fatal(err)
	}
}

// changes lists pod creations (+target node) and deletions (-pod name).
func (f *fixture) changes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a.GetVerb() {
		case "create":
			p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
			node, _ := targetNode(p)
			out = append(out, "+"+node)
		case "delete":
			out = append(out, "-"+a.(k8stesting.DeleteAction).GetName())
		}
	}
	sort.Strings(out)
	return out
}

func TestSyncPlacesOnePodPerEligibleNode(t *testing.T) {
	ds := testDS().ds
	f := newFixture(t, ds, testNode("n1").n, testNode("n2").n, testNode("tainted").taint("dedicated", corev1.TaintEffectNoSchedule).n)
	f.sync()
	if got := f.changes(); fmt.Sprint(got) != "[+n1 +n2]" {
		t.Fatalf("pod changes %v, want one pod on n1 and on n2", got)
	}
	var pod *corev1.Pod
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			pod = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		}
	}
	hash := templatehash.PodTemplate(&ds.Spec.Template, nil)
	if pod.Spec.NodeName != "" || pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || pod.GenerateName != "agent-" {
		t.Fatalf("pod nodeName %q labels %v", pod.Spec.NodeName, pod.Labels)
	}
	req := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(req) != 1 || len(req[0].MatchFields) != 1 || req[0].MatchFields[0].Key != "metadata.name" {
		t.Fatalf("pod node affinity %+v", req)
	}
	keys := map[string]bool{}
	for _, tol := range pod.Spec.Tolerations {
		keys[tol.Key] = true
	}
	for _, k := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeDiskPressure,
		corev1.TaintNodeMemoryPressure, corev1.TaintNodePIDPressure, corev1.TaintNodeUnschedulable} {
		if !keys[k] {
			t.Fatalf("pod lacks the %s toleration: %+v", k, pod.Spec.Tolerations)
		}
	}
	// Expectations hold the next sync back until the cache shows the pods.
	f.client.ClearActions()
	f.sync()
	if got := f.changes(); len(got) != 0 {
		t.Fatalf("second sync before the cache caught up: %v", got)
	}
}

func TestSyncRemovesMisplacedAndDuplicatePods(t *testing.T) {
	ds := testDS().selector("role", "edge").ds
	misplaced := daemonPod(ds, ds, "n1", time.Hour)
	first := daemonPod(ds, ds, "n2", time.Hour)
	dup := daemonPod(ds, ds, "n2", time.Hour)
	dup.Name, dup.UID, dup.CreationTimestamp = "agent-dup", "dup", metav1.NewTime(t0)
	evicted := daemonPod(ds, ds, "n3", time.Hour)
	f := newFixture(t, ds, testNode("n1").taint("x", corev1.TaintEffectNoExecute).label("role", "edge").n,
		testNode("n2").label("role", "edge").n, testNode("n3").n, misplaced, first, dup, evicted)
	f.sync()
	want := []string{"-" + dup.Name, "-" + evicted.Name, "-" + misplaced.Name}
	sort.Strings(want)
	if got := f.changes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pod changes %v, want %v (the younger duplicate and the pods of nodes that no longer qualify)", got, want)
	}
}

func TestRollingUpdate(t *testing.T) {
	old := testDS().ds
	nodes := []runtime.Object{testNode("n1").n, testNode("n2").n, testNode("n3").n}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		pods func(ds *appsv1.DaemonSet) []runtime.Object
		want []string
	}{
		{"maxUnavailable 1: one old pod at a time", testDS().image("agent:2").ds, func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, old, "n1", time.Hour), daemonPod(ds, old, "n2", time.Hour), daemonPod(ds, old, "n3", time.Hour)}
		}, []string{"-agent-n1-"}},
		{"maxUnavailable 1: wait for the new pod", testDS().image("agent:2").ds, func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{unready(daemonPod(ds, ds, "n1", 0)), daemonPod(ds, old, "n2", time.Hour), daemonPod(ds, old, "n3", time.Hour)}
		}, nil},
		{"unavailable old pods go at once", testDS().image("agent:2").ds, func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{unready(daemonPod(ds, old, "n1", 0)), unready(daemonPod(ds, old, "n2", 0)), daemonPod(ds, old, "n3", time.Hour)}
		}, []string{"-agent-n1-", "-agent-n2-"}},
		{"maxSurge 1: a new pod beside an old one", testDS().image("agent:2").surge(1).ds, func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, old, "n1", time.Hour), daemonPod(ds, old, "n2", time.Hour), daemonPod(ds, old, "n3", time.Hour)}
		}, []string{"+n1"}},
		{"maxSurge 1: the old pod goes once the new one is available", testDS().image("agent:2").surge(1).ds, func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, old, "n1", time.Hour), daemonPod(ds, ds, "n1", time.Minute), daemonPod(ds, old, "n2", time.Hour), daemonPod(ds, old, "n3", time.Hour)}
		}, []string{"-agent-n1-"}},
		{"maxSurge 1: then the next node", testDS().image("agent:2").surge(1).ds, func(ds *appsv1.DaemonSet) []runtime.Object {
			return []runtime.Object{daemonPod(ds, ds, "n1", time.Minute), daemonPod(ds, old, "n2", time.Hour), daemonPod(ds, old, "n3", time.Hour)}
		}, []string{"+n2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append(append([]runtime.Object{tt.ds}, nodes...), tt.pods(tt.ds)...)
			f := newFixture(t, objs...)
			f.sync()
			got := f.changes()
			// Pod names end in a hash; compare their node prefix.
			for i, c := range got {
				if len(c) > len("-agent-n1-") && c[0] == '-' {
					got[i] = c[:len("-agent-n1-")]
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("pod changes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	old := testDS().ds
	ds := testDS().image("agent:2").ds
	ds.Spec.MinReadySeconds = 30
	ds.Generation = 3
	f := newFixture(t, ds, testNode("n1").n, testNode("n2").n, testNode("n3").n,
		testNode("off").taint("x", corev1.TaintEffectNoSchedule).n,
		daemonPod(ds, ds, "n1", time.Hour), daemonPod(ds, old, "n2", 10*time.Second), daemonPod(ds, old, "off", time.Hour))
	// Keep manage and the rolling update from acting: only the status.
	f.dc.exp.ExpectCreations("ns/agent", 1)
	f.sync()
	var st *appsv1.DaemonSetStatus
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			st = &a.(k8stesting.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
		}
	}
	if st == nil {
		t.Fatal("no status written")
	}
	want := appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, NumberMisscheduled: 1, NumberReady: 2,
		NumberAvailable: 1, UpdatedNumberScheduled: 1, NumberUnavailable: 2, ObservedGeneration: 0}
	if fmt.Sprint(*st) != fmt.Sprint(want) {
		t.Fatalf("status %+v, want %+v (observedGeneration unchanged while expectations are pending)", *st, want)
	}
}
