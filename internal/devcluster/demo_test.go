package devcluster

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestDemoServiceSelectsTheDeploymentsPods(t *testing.T) {
	d, svc := DemoDeployment(), DemoService()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	if !sel.Matches(podLabels) || !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("pods %v not selected by %v / %v", podLabels, d.Spec.Selector, svc.Spec.Selector)
	}
	c := d.Spec.Template.Spec.Containers[0]
	port := svc.Spec.Ports[0].TargetPort.String()
	found := false
	for _, p := range c.Ports {
		found = found || p.Name == port
	}
	if !found {
		t.Errorf("service target port %q is not a container port %v", port, c.Ports)
	}
	if c.Image != DemoImage || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %s pull policy %s: the image is only in the nodes' stores", c.Image, c.ImagePullPolicy)
	}
	if *d.Spec.Replicas != DemoReplicas || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("replicas %d, type %s", *d.Spec.Replicas, svc.Spec.Type)
	}
}

func TestAllReadyWantsLeasesRenewedByTheseAgents(t *testing.T) {
	now := time.Now()
	node := func(name string, ready corev1.ConditionStatus) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	lease := func(name string, renewed time.Time) coordinationv1.Lease {
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	want := []string{"a", "b"}
	tests := []struct {
		name   string
		nodes  []corev1.Node
		leases []coordinationv1.Lease
		ready  bool
	}{
		{"both ready and renewed", []corev1.Node{node("a", "True"), node("b", "True")},
			[]coordinationv1.Lease{lease("a", now), lease("b", now)}, true},
		{"one missing", []corev1.Node{node("a", "True")}, []coordinationv1.Lease{lease("a", now)}, false},
		{"one not ready", []corev1.Node{node("a", "True"), node("b", "False")},
			[]coordinationv1.Lease{lease("a", now), lease("b", now)}, false},
		{"ready from the last run", []corev1.Node{node("a", "True"), node("b", "True")},
			[]coordinationv1.Lease{lease("a", now), lease("b", now.Add(-time.Minute))}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allReady(tt.nodes, tt.leases, want, now.Add(-time.Second)); got != tt.ready {
				t.Errorf("allReady = %v, want %v", got, tt.ready)
			}
		})
	}
}
