package deployment

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// db builds test Deployments.
type db struct{ d *appsv1.Deployment }

func testDeployment(name string, replicas int32) db {
	lbl := map[string]string{"app": name}
	return db{&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}}
}

func (b db) surge(s, u intstr.IntOrString) db {
	b.d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}
	return b
}
func (b db) recreate() db {
	b.d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return b
}
func (b db) image(img string) db { b.d.Spec.Template.Spec.Containers[0].Image = img; return b }

// rsOf builds a set of d's current template (or of image) with replicas
// and available pods.
func rsOf(d *appsv1.Deployment, name string, replicas, available int32, age time.Duration) *appsv1.ReplicaSet {
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = withLabel(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey, name)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + name, Namespace: d.Namespace, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(t0.Add(-age)), Labels: tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, kind)},
			Annotations: map[string]string{DesiredReplicasAnnotation: fmt.Sprint(*d.Spec.Replicas),
				MaxReplicasAnnotation: fmt.Sprint(*d.Spec.Replicas + maxSurge(d))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: *tmpl,
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available},
	}
}

func TestFenceposts(t *testing.T) {
	tests := []struct {
		name           string
		surge, unavail intstr.IntOrString
		replicas       int32
		wantS, wantU   int32
	}{
		{"defaults on 10", intstr.FromString("25%"), intstr.FromString("25%"), 10, 3, 2},
		{"defaults on 4", intstr.FromString("25%"), intstr.FromString("25%"), 4, 1, 1},
		{"defaults on 1", intstr.FromString("25%"), intstr.FromString("25%"), 1, 1, 0},
		{"counts", intstr.FromInt32(2), intstr.FromInt32(1), 5, 2, 1},
		{"unavailable over replicas is capped", intstr.FromInt32(0), intstr.FromInt32(9), 3, 0, 3},
		{"both round to zero: one may be unavailable", intstr.FromString("0%"), intstr.FromString("10%"), 5, 0, 1},
		{"zero replicas", intstr.FromString("25%"), intstr.FromString("25%"), 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDeployment("web", tt.replicas).surge(tt.surge, tt.unavail).d
			if s, u := maxSurge(d), maxUnavailable(d); s != tt.wantS || u != tt.wantU {
				t.Fatalf("maxSurge, maxUnavailable = %d, %d; want %d, %d", s, u, tt.wantS, tt.wantU)
			}
		})
	}
	if s, u := maxSurge(testDeployment("web", 3).recreate().d), maxUnavailable(testDeployment("web", 3).recreate().d); s != 0 || u != 0 {
		t.Fatalf("Recreate: surge %d, unavailable %d", s, u)
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	d := testDeployment("web", 10).surge(intstr.FromInt32(3), intstr.FromInt32(2)).d
	tests := []struct {
		name         string
		old, newSize int32
		want         int32
	}{
		{"surge from a full old set", 10, 0, 3},
		{"at the surge limit", 10, 3, 3},
		{"old set shrunk", 5, 3, 8},
		{"never above replicas", 0, 8, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := rsOf(d, "old", tt.old, tt.old, time.Hour)
			newRS := rsOf(d, "new", tt.newSize, 0, 0)
			if got := newRSNewReplicas(d, []*appsv1.ReplicaSet{old, newRS}, newRS); got != tt.want {
				t.Fatalf("new set size %d, want %d", got, tt.want)
			}
		})
	}
	if got := newRSNewReplicas(testDeployment("web", 4).recreate().d, nil, rsOf(d, "new", 0, 0, 0)); got != 4 {
		t.Fatalf("Recreate: new set size %d, want 4", got)
	}
}

func TestProportionalScaling(t *testing.T) {
	// A rollout of 10 replicas (maxSurge 3) is under way: old 8, new 5.
	before := testDeployment("web", 10).surge(intstr.FromInt32(3), intstr.FromInt32(2)).d
	tests := []struct {
		name     string
		replicas int32
		wantOld  int32
		wantNew  int32
		wantOp   string
	}{
		// 13 -> 23 allowed pods: old 8*23/13=14.15 -> 14, new 5*23/13=8.8 -> 9.
		{"scale up to 20", 20, 14, 9, "up"},
		// 13 -> 8 allowed: old 8*8/13=4.9 -> 5 (-3), new 5*8/13=3.07 -> 3 (-2).
		{"scale down to 5", 5, 5, 3, "down"},
		{"scale to zero", 0, 0, 0, "down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := rsOf(before, "old", 8, 8, time.Hour)
			newRS := rsOf(before, "new", 5, 5, time.Minute)
			d := before.DeepCopy()
			d.Spec.Replicas = ptr.To(tt.replicas)
			sizes, op := proportionalSizes(d, []*appsv1.ReplicaSet{old, newRS})
			got := map[string]int32{}
			for _, s := range sizes {
				got[s.rs.Name] = s.size
			}
			if got["web-old"] != tt.wantOld || got["web-new"] != tt.wantNew || op != tt.wantOp {
				t.Fatalf("sizes %v (%s), want old %d new %d (%s)", got, op, tt.wantOld, tt.wantNew, tt.wantOp)
			}
			if tt.replicas > 0 {
				if total := got["web-old"] + got["web-new"]; total != tt.replicas+maxSurge(d) {
					t.Fatalf("total %d, want replicas+maxSurge = %d", total, tt.replicas+maxSurge(d))
				}
			}
		})
	}
}

func TestMaxScaledDown(t *testing.T) {
	d := testDeployment("web", 10).surge(intstr.FromInt32(3), intstr.FromInt32(2)).d
	tests := []struct {
		name                  string
		old, oldAvail         int32
		newSize, newAvailable int32
		want                  int32
	}{
		{"new pods not yet available hold the old ones", 8, 8, 5, 0, 0},
		{"new pods available free the surge", 8, 8, 5, 5, 5},
		{"a stuck new set does not drain the old one", 8, 7, 5, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := rsOf(d, "old", tt.old, tt.oldAvail, time.Hour)
			newRS := rsOf(d, "new", tt.newSize, tt.newAvailable, 0)
			if got := maxScaledDown(d, []*appsv1.ReplicaSet{old, newRS}, newRS); got != tt.want {
				t.Fatalf("maxScaledDown = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestNewReplicaSetAnnotations(t *testing.T) {
	d := testDeployment("web", 3).d
	d.Annotations = map[string]string{"team": "a", RevisionAnnotation: "7", lastAppliedAnnotation: "{}"}
	tests := []struct {
		name        string
		rsAnn       map[string]string
		newRevision string
		exists      bool
		want        map[string]string
	}{
		{"new set", nil, "1", false, map[string]string{"team": "a", RevisionAnnotation: "1",
			DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "4"}},
		{"rollback reuses a set", map[string]string{RevisionAnnotation: "1"}, "3", true,
			map[string]string{"team": "a", RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"}},
		{"second rollback appends history", map[string]string{RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"}, "5", true,
			map[string]string{"team": "a", RevisionAnnotation: "5", RevisionHistoryAnnotation: "1,3"}},
		{"never goes back", map[string]string{RevisionAnnotation: "9"}, "5", true,
			map[string]string{"team": "a", RevisionAnnotation: "9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: tt.rsAnn}}
			setNewReplicaSetAnnotations(d, rs, tt.newRevision, tt.exists)
			if fmt.Sprint(rs.Annotations) != fmt.Sprint(tt.want) {
				t.Fatalf("annotations %v, want %v", rs.Annotations, tt.want)
			}
		})
	}
}

func TestProgressConditions(t *testing.T) {
	d := testDeployment("web", 2).d
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	progressingSince := func(reason string, ago time.Duration) []appsv1.DeploymentCondition {
		return []appsv1.DeploymentCondition{newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, reason, "", t0.Add(-ago))}
	}
	tests := []struct {
		name       string
		prior      appsv1.DeploymentStatus
		old, newRS [2]int32 // replicas, available
		wantReason string
		wantAvail  corev1.ConditionStatus
	}{
		{"complete", appsv1.DeploymentStatus{Conditions: progressingSince(ReasonReplicaSetUpdated, time.Second)},
			[2]int32{0, 0}, [2]int32{2, 2}, ReasonNewReplicaSetAvailable, corev1.ConditionTrue},
		{"progress", appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, Conditions: progressingSince(ReasonNewReplicaSetCreated, time.Hour)},
			[2]int32{1, 1}, [2]int32{2, 1}, ReasonReplicaSetUpdated, corev1.ConditionTrue},
		{"deadline passed", appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: progressingSince(ReasonReplicaSetUpdated, 2*time.Minute)},
			[2]int32{2, 2}, [2]int32{1, 0}, ReasonProgressDeadlineExceeded, corev1.ConditionTrue},
		{"within the deadline", appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2,
			Conditions: progressingSince(ReasonReplicaSetUpdated, 30*time.Second)},
			[2]int32{2, 2}, [2]int32{1, 0}, ReasonReplicaSetUpdated, corev1.ConditionTrue},
		{"below minimum availability", appsv1.DeploymentStatus{Conditions: progressingSince(ReasonReplicaSetUpdated, time.Second)},
			[2]int32{0, 0}, [2]int32{2, 0}, ReasonReplicaSetUpdated, corev1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dd := d.DeepCopy()
			dd.Status = tt.prior
			old := rsOf(dd, "old", tt.old[0], tt.old[1], time.Hour)
			newRS := rsOf(dd, "new", tt.newRS[0], tt.newRS[1], 0)
			st := rolloutStatus([]*appsv1.ReplicaSet{old, newRS}, newRS, dd, t0)
			p, a := condition(st, appsv1.DeploymentProgressing), condition(st, appsv1.DeploymentAvailable)
			if p == nil || p.Reason != tt.wantReason || a == nil || a.Status != tt.wantAvail {
				t.Fatalf("Progressing %+v, Available %+v; want reason %s, available %s", p, a, tt.wantReason, tt.wantAvail)
			}
		})
	}
}
