package apps

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

var ctx = context.Background()

type wantErr struct {
	field string
	typ   field.ErrorType
}

func checkErrs(t *testing.T, errs field.ErrorList, want ...wantErr) {
	t.Helper()
	got := map[wantErr]int{}
	for _, e := range errs {
		got[wantErr{e.Field, e.Type}]++
	}
	for _, w := range want {
		if got[w] == 0 {
			t.Errorf("missing error %s %s; got %v", w.field, w.typ, errs)
			continue
		}
		got[w]--
	}
	for w, n := range got {
		if n > 0 {
			t.Errorf("unexpected error %s %s; all: %v", w.field, w.typ, errs)
		}
	}
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
}

func webLabels() map[string]string { return map[string]string{"app": "web"} }

func testDeployment(f func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: webLabels()},
			Template: template(webLabels()),
		},
	}
	if f != nil {
		f(d)
	}
	return d
}

func createDeployment(d *appsv1.Deployment) field.ErrorList {
	s := DeploymentStrategy()
	s.Default(d)
	s.PrepareForCreate(ctx, d)
	return s.Validate(ctx, d)
}

func TestDeploymentDefaults(t *testing.T) {
	d := testDeployment(func(d *appsv1.Deployment) { d.Status.Replicas = 5 })
	if errs := createDeployment(d); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := d.Spec
	ru := s.Strategy.RollingUpdate
	if *s.Replicas != 1 || s.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		*ru.MaxSurge != intstr.FromString("25%") || *ru.MaxUnavailable != intstr.FromString("25%") ||
		*s.RevisionHistoryLimit != 10 || *s.ProgressDeadlineSeconds != 600 {
		t.Errorf("spec = %+v", s)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyAlways || pod.DNSPolicy != corev1.DNSClusterFirst ||
		pod.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent || pod.EnableServiceLinks != nil {
		t.Errorf("template defaults = %+v", pod)
	}
	if d.Status.Replicas != 0 || d.Generation != 1 {
		t.Errorf("create kept status %+v / generation %d", d.Status, d.Generation)
	}
	limitsOnly := testDeployment(func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	})
	createDeployment(limitsOnly)
	if limitsOnly.Spec.Template.Spec.Containers[0].Resources.Requests != nil {
		t.Error("templates must not get requests from limits (pods only)")
	}
}

func TestDeploymentValidation(t *testing.T) {
	tests := []struct {
		name string
		d    *appsv1.Deployment
		want []wantErr
	}{
		{"selector does not match", testDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} }),
			[]wantErr{{"spec.template.metadata.labels", field.ErrorTypeInvalid}}},
		{"no selector", testDeployment(func(d *appsv1.Deployment) { d.Spec.Selector = nil }),
			[]wantErr{{"spec.selector", field.ErrorTypeRequired}, {"spec.template.metadata.labels", field.ErrorTypeInvalid}}},
		{"empty selector", testDeployment(func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }),
			[]wantErr{{"spec.selector", field.ErrorTypeInvalid}}},
		{"restart never", testDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			[]wantErr{{"spec.template.spec.restartPolicy", field.ErrorTypeNotSupported}}},
		{"negative replicas", testDeployment(func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) }),
			[]wantErr{{"spec.replicas", field.ErrorTypeInvalid}}},
		{"no image", testDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }),
			[]wantErr{{"spec.template.spec.containers[0].image", field.ErrorTypeRequired}}},
		{"bad template label", testDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Labels["x"] = "a b" }),
			[]wantErr{{"spec.template.labels", field.ErrorTypeInvalid}}},
		{"both zero", testDeployment(func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("0%"))}
		}), []wantErr{{"spec.strategy.rollingUpdate.maxUnavailable", field.ErrorTypeInvalid}}},
		{"recreate with rolling update", testDeployment(func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}), []wantErr{{"spec.strategy.rollingUpdate", field.ErrorTypeForbidden}}},
		{"over 100%", testDeployment(func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromString("150%"))}
		}), []wantErr{{"spec.strategy.rollingUpdate.maxUnavailable", field.ErrorTypeInvalid}}},
		{"deadline below min ready", testDeployment(func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 700
		}), []wantErr{{"spec.progressDeadlineSeconds", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrs(t, createDeployment(tt.d), tt.want...) })
	}
	t.Run("message", func(t *testing.T) {
		errs := createDeployment(testDeployment(func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} }))
		want := `spec.template.metadata.labels: Invalid value: {"app":"api"}: ` + "`selector` does not match template `labels`"
		if len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("got %q\nwant %q", errs, want)
		}
	})
}

func TestDeploymentUpdates(t *testing.T) {
	s := DeploymentStrategy()
	old := testDeployment(nil)
	createDeployment(old)
	old.Status.Replicas = 1

	sel := old.DeepCopy()
	sel.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
	sel.Spec.Template.Labels = map[string]string{"app": "web", "tier": "x"}
	checkErrs(t, s.ValidateUpdate(ctx, sel, old), wantErr{"spec.selector", field.ErrorTypeInvalid})

	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	scaled.Status.Replicas = 9
	s.PrepareForUpdate(ctx, scaled, old)
	checkErrs(t, s.ValidateUpdate(ctx, scaled, old))
	if scaled.Status.Replicas != 1 || !s.SpecChanged(scaled, old) {
		t.Errorf("main update: status %+v", scaled.Status)
	}

	annotated := old.DeepCopy()
	annotated.Annotations = map[string]string{"kubernetes.io/change-cause": "x"}
	if !s.SpecChanged(annotated, old) {
		t.Error("annotation change must bump a deployment's generation")
	}

	st := old.DeepCopy()
	st.Spec.Replicas = ptr.To[int32](7)
	st.Labels = map[string]string{"x": "y"}
	st.Annotations = map[string]string{"deployment.kubernetes.io/revision": "2"}
	st.Status.Replicas = 3
	s.PrepareStatusForUpdate(ctx, st, old)
	if *st.Spec.Replicas != 1 || st.Labels != nil || st.Status.Replicas != 3 {
		t.Errorf("status update: %+v", st)
	}
	if st.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("a status update dropped the controller's annotations: %v", st.Annotations)
	}
	bad := st.DeepCopy()
	bad.Status.AvailableReplicas = 5
	checkErrs(t, s.ValidateUpdate(ctx, bad, old), wantErr{"status.availableReplicas", field.ErrorTypeInvalid})
}

func TestReplicaSetAndDaemonSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "d", ResourceVersion: "1"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: webLabels()}, Template: template(webLabels())}}
	rss := ReplicaSetStrategy()
	rss.Default(rs)
	rss.PrepareForCreate(ctx, rs)
	if errs := rss.Validate(ctx, rs); len(errs) > 0 || *rs.Spec.Replicas != 1 {
		t.Fatalf("replicaset: %v %+v", errs, rs.Spec)
	}
	rs2 := rs.DeepCopy()
	rs2.Spec.Selector.MatchLabels = map[string]string{"app": "web", "v": "2"}
	rs2.Spec.Template.Labels = rs2.Spec.Selector.MatchLabels
	checkErrs(t, rss.ValidateUpdate(ctx, rs2, rs), wantErr{"spec.selector", field.ErrorTypeInvalid})
	if ReplicaSetFields(rs)["status.replicas"] != "0" {
		t.Error("status.replicas field missing")
	}

	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "d"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: webLabels()}, Template: template(webLabels())}}
	dss := DaemonSetStrategy()
	dss.Default(ds)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || *ru.MaxUnavailable != intstr.FromInt32(1) ||
		*ru.MaxSurge != intstr.FromInt32(0) || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("daemonset defaults = %+v", ds.Spec)
	}
	checkErrs(t, dss.Validate(ctx, ds))
	ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
	ds.Spec.Selector = &metav1.LabelSelector{}
	checkErrs(t, dss.Validate(ctx, ds),
		wantErr{"spec.updateStrategy.rollingUpdate.maxSurge", field.ErrorTypeInvalid}, wantErr{"spec.selector", field.ErrorTypeInvalid})
}

func testStatefulSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "d", ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{
			Selector:    &metav1.LabelSelector{MatchLabels: webLabels()},
			ServiceName: "db",
			Template: func() corev1.PodTemplateSpec {
				t := template(webLabels())
				t.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/db"}}
				return t
			}(),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
		}}
}

func TestStatefulSet(t *testing.T) {
	s := StatefulSetStrategy()
	ss := testStatefulSet()
	s.Default(ss)
	s.PrepareForCreate(ctx, ss)
	if errs := s.Validate(ctx, ss); len(errs) > 0 {
		t.Fatalf("statefulset mounting its claim refused: %v", errs)
	}
	sp := ss.Spec
	if sp.PodManagementPolicy != appsv1.OrderedReadyPodManagement || sp.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		*sp.UpdateStrategy.RollingUpdate.Partition != 0 || *sp.Replicas != 1 || *sp.RevisionHistoryLimit != 10 ||
		sp.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*sp.VolumeClaimTemplates[0].Spec.VolumeMode != corev1.PersistentVolumeFilesystem ||
		sp.VolumeClaimTemplates[0].Status.Phase != corev1.ClaimPending {
		t.Errorf("statefulset defaults = %+v", sp)
	}
	tests := []struct {
		name   string
		change func(*appsv1.StatefulSet)
		want   []wantErr
	}{
		{"replicas", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](3) }, nil},
		{"image", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "db:2" }, nil},
		{"service name", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" }, []wantErr{{"spec", field.ErrorTypeForbidden}}},
		{"claims", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates[0].Name = "x" }, []wantErr{
			{"spec", field.ErrorTypeForbidden}, {"spec.template.spec.containers[0].volumeMounts[0].name", field.ErrorTypeNotFound}}},
		{"management policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" }, []wantErr{
			{"spec", field.ErrorTypeForbidden}, {"spec.podManagementPolicy", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := ss.DeepCopy()
			tt.change(n)
			checkErrs(t, s.ValidateUpdate(ctx, n, ss), tt.want...)
		})
	}
	t.Run("message", func(t *testing.T) {
		n := ss.DeepCopy()
		n.Spec.ServiceName = "other"
		errs := s.ValidateUpdate(ctx, n, ss)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "updates to statefulset spec for fields other than 'replicas'") {
			t.Errorf("got %v", errs)
		}
	})
}

func TestScaleSubresource(t *testing.T) {
	sc := Scaler{}
	d := testDeployment(nil)
	createDeployment(d)
	d.Status.Replicas = 1
	s, err := sc.Scale(d)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Replicas != 1 || s.Status.Replicas != 1 || s.Status.Selector != "app=web" || s.Name != "web" || s.ResourceVersion != "1" {
		t.Errorf("scale = %+v", s)
	}
	if err := sc.SetReplicas(d, 4); err != nil || *d.Spec.Replicas != 4 {
		t.Errorf("set replicas: %v %d", err, *d.Spec.Replicas)
	}
	s.Spec.Replicas = -1
	if errs := sc.ValidateScale(s); len(errs) != 1 || errs[0].Field != "spec.replicas" {
		t.Errorf("validate scale: %v", errs)
	}
	if _, err := sc.Scale(&appsv1.DaemonSet{}); err == nil {
		t.Error("daemonset has no scale subresource")
	}
}

func TestBadLabelOnUpdateIsReportedOnce(t *testing.T) {
	s := DeploymentStrategy()
	old := testDeployment(nil)
	createDeployment(old)
	n := old.DeepCopy()
	n.Labels = map[string]string{"app": "a b"}
	checkErrs(t, s.ValidateUpdate(ctx, n, old), wantErr{"metadata.labels", field.ErrorTypeInvalid})
}
