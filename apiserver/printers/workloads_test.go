package printers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// template is a pod template of two containers, web (nginx) and log (fluent).
func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Image: "nginx:1.27"}, {Name: "log", Image: "fluent:2"},
	}}}
}

// selector matches app=web.
func selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
}

func TestDeployment(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: objMeta("web"),
		Spec:       appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Selector: selector(), Template: template()},
		Status:     appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 1},
	}
	checkColumns(t, d,
		[]string{"Name", "Ready", "Up-to-date", "Available", "Age"},
		[]string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"})

	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []any
	}{
		{"rolling out", func(*appsv1.Deployment) {},
			[]any{"web", "2/3", int64(3), int64(1), "60m", "web,log", "nginx:1.27,fluent:2", "app=web"}},
		{"unset replicas read as the default of one", func(d *appsv1.Deployment) { d.Spec.Replicas = nil },
			[]any{"web", "2/1", int64(3), int64(1), "60m", "web,log", "nginx:1.27,fluent:2", "app=web"}},
		{"empty selector shows nothing", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			[]any{"web", "2/3", int64(3), int64(1), "60m", "web,log", "nginx:1.27,fluent:2", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := d.DeepCopy()
			tt.mutate(d)
			checkCells(t, wideRow(t, d), tt.want)
		})
	}
}

func TestReplicaSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: objMeta("web-5d8f"),
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr(int32(3)), Selector: selector(), Template: template()},
		Status:     appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2},
	}
	checkColumns(t, rs,
		[]string{"Name", "Desired", "Current", "Ready", "Age"},
		[]string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"})
	checkCells(t, wideRow(t, rs), []any{"web-5d8f", int64(3), int64(3), int64(2), "60m", "web,log", "nginx:1.27,fluent:2", "app=web"})

	rs.Spec.Selector = nil
	if got := wideRow(t, rs)[7]; got != "<none>" {
		t.Errorf("SELECTOR of a nil selector = %q, want <none>", got)
	}
}

func TestStatefulSet(t *testing.T) {
	ss := &appsv1.StatefulSet{
		ObjectMeta: objMeta("db"),
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr(int32(3)), Selector: selector(), Template: template()},
		Status:     appsv1.StatefulSetStatus{ReadyReplicas: 1},
	}
	checkColumns(t, ss, []string{"Name", "Ready", "Age"}, []string{"Name", "Ready", "Age", "Containers", "Images"})
	checkCells(t, wideRow(t, ss), []any{"db", "1/3", "60m", "web,log", "nginx:1.27,fluent:2"})
}

func TestDaemonSet(t *testing.T) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: objMeta("agent"),
		Spec:       appsv1.DaemonSetSpec{Selector: selector(), Template: template()},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 5, CurrentNumberScheduled: 4,
			NumberReady: 3, UpdatedNumberScheduled: 2, NumberAvailable: 1},
	}
	checkColumns(t, ds,
		[]string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age"},
		[]string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers", "Images", "Selector"})
	checkCells(t, wideRow(t, ds), []any{"agent", int64(5), int64(4), int64(3), int64(2), int64(1), "<none>", "60m",
		"web,log", "nginx:1.27,fluent:2", "app=web"})

	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	if got := wideRow(t, ds)[6]; got != "kubernetes.io/os=linux" {
		t.Errorf("NODE SELECTOR = %q, want kubernetes.io/os=linux", got)
	}
}

func TestReplicationController(t *testing.T) {
	tmpl := template()
	rc := &corev1.ReplicationController{
		ObjectMeta: objMeta("old"),
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr(int32(2)), Selector: map[string]string{"app": "old"}, Template: &tmpl},
		Status:     corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1},
	}
	checkColumns(t, rc,
		[]string{"Name", "Desired", "Current", "Ready", "Age"},
		[]string{"Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"})
	checkCells(t, wideRow(t, rc), []any{"old", int64(2), int64(2), int64(1), "60m", "web,log", "nginx:1.27,fluent:2", "app=old"})
}

func TestControllerRevision(t *testing.T) {
	cr := &appsv1.ControllerRevision{ObjectMeta: objMeta("db-7c9"), Revision: 4}
	checkColumns(t, cr, []string{"Name", "Controller", "Revision", "Age"}, []string{"Name", "Controller", "Revision", "Age"})
	checkCells(t, wideRow(t, cr), []any{"db-7c9", "<none>", int64(4), "60m"})

	cr.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Controller: ptr(true)}}
	if got := wideRow(t, cr)[1]; got != "statefulset.apps/db" {
		t.Errorf("CONTROLLER = %q, want statefulset.apps/db", got)
	}
}
