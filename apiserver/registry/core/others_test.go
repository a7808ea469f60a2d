package core

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestNamespaceIsActiveWithKubernetesFinalizer(t *testing.T) {
	s := NamespaceStrategy()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	s.Default(ns)
	s.PrepareForCreate(ctx, ns)
	if errs := s.Validate(ctx, ns); len(errs) > 0 {
		t.Fatal(errs)
	}
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes ||
		ns.Labels[corev1.LabelMetadataName] != "team-a" {
		t.Errorf("namespace = %+v", ns)
	}

	tests := []struct {
		name string
		ns   *corev1.Namespace
		want []wantErr
	}{
		{"not a DNS label", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}}, []wantErr{{"metadata.name", field.ErrorTypeInvalid}}},
		{"namespaced", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b"}}, []wantErr{{"metadata.namespace", field.ErrorTypeForbidden}}},
		{"bad finalizer", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"mine"}}},
			[]wantErr{{"spec.finalizers", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrs(t, s.Validate(ctx, tt.ns), tt.want...) })
	}

	t.Run("update keeps finalizers and status", func(t *testing.T) {
		old := ns.DeepCopy()
		old.ResourceVersion = "1"
		n := old.DeepCopy()
		n.Spec.Finalizers = nil
		n.Status.Phase = corev1.NamespaceTerminating
		s.PrepareForUpdate(ctx, n, old)
		if len(n.Spec.Finalizers) != 1 || n.Status.Phase != corev1.NamespaceActive {
			t.Errorf("update = %+v", n)
		}
		n.Status.Phase = corev1.NamespaceTerminating
		checkErrs(t, s.ValidateUpdate(ctx, n, old), wantErr{"status.Phase", field.ErrorTypeInvalid})
	})
}

func TestNamespaceFinalizeChangesSpecFinalizersOnly(t *testing.T) {
	s := NamespaceFinalizeStrategy()
	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", ResourceVersion: "1"},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	now := metav1.Now()
	old.DeletionTimestamp = &now
	tests := []struct {
		name       string
		finalizers []corev1.FinalizerName
		want       []wantErr
	}{
		{"cleared", nil, nil},
		{"kept", []corev1.FinalizerName{corev1.FinalizerKubernetes}, nil},
		{"bad name", []corev1.FinalizerName{"not a name"}, []wantErr{{"spec.finalizers", field.ErrorTypeInvalid}, {"spec.finalizers", field.ErrorTypeInvalid}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := old.DeepCopy()
			n.Spec.Finalizers = tt.finalizers
			n.Status.Phase = corev1.NamespaceActive
			s.Default(n)
			s.PrepareForUpdate(ctx, n, old)
			checkErrs(t, s.ValidateUpdate(ctx, n, old), tt.want...)
			if len(n.Spec.Finalizers) != len(tt.finalizers) || n.Status.Phase != corev1.NamespaceTerminating {
				t.Errorf("finalize = %+v", n)
			}
		})
	}
}

func TestNodeKeepsPodCIDRAndStatus(t *testing.T) {
	s := NodeStrategy()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	s.Default(n)
	s.PrepareForCreate(ctx, n)
	if errs := s.Validate(ctx, n); len(errs) > 0 {
		t.Fatal(errs)
	}
	if n.Status.Allocatable.Cpu().String() != "4" {
		t.Errorf("allocatable = %v, want capacity (status kept on create)", n.Status.Allocatable)
	}
	u := n.DeepCopy()
	u.Spec.PodCIDR, u.Spec.PodCIDRs = "10.244.2.0/24", []string{"10.244.2.0/24"}
	u.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "Sometimes"}}
	checkErrs(t, s.ValidateUpdate(ctx, u, n),
		wantErr{"spec.podCIDRs", field.ErrorTypeForbidden}, wantErr{"spec.taints[0].effect", field.ErrorTypeNotSupported})
}

func TestConfigMapAndSecretData(t *testing.T) {
	cm := ConfigMapStrategy()
	tests := []struct {
		name string
		cm   *corev1.ConfigMap
		want []wantErr
	}{
		{"ok", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "d"}, Data: map[string]string{"app.conf": "x"}}, nil},
		{"bad key", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "d"}, Data: map[string]string{"a b": "x"}},
			[]wantErr{{"data[a b]", field.ErrorTypeInvalid}}},
		{"key in both", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "d"}, Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": nil}},
			[]wantErr{{"binaryData[k]", field.ErrorTypeInvalid}}},
		{"too big", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "d"}, Data: map[string]string{"k": strings.Repeat("x", corev1.MaxSecretSize+1)}},
			[]wantErr{{field.NewPath("").String(), field.ErrorTypeTooLong}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErrs(t, cm.Validate(ctx, tt.cm), tt.want...) })
	}
	t.Run("immutable", func(t *testing.T) {
		old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "d", ResourceVersion: "1"}, Data: map[string]string{"k": "1"}, Immutable: ptr.To(true)}
		n := old.DeepCopy()
		n.Data["k"] = "2"
		n.Immutable = nil
		checkErrs(t, cm.ValidateUpdate(ctx, n, old), wantErr{"data", field.ErrorTypeForbidden}, wantErr{"immutable", field.ErrorTypeForbidden})
	})

	sec := SecretStrategy()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "d"},
		Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}, StringData: map[string]string{"b": "3"}}
	sec.Default(s)
	if s.Type != corev1.SecretTypeOpaque || string(s.Data["a"]) != "1" || string(s.Data["b"]) != "3" || s.StringData != nil {
		t.Errorf("secret = %+v", s)
	}
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "d"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}}
	checkErrs(t, sec.Validate(ctx, tls), wantErr{"data[tls.key]", field.ErrorTypeRequired})
	old := s.DeepCopy()
	old.ResourceVersion = "1"
	n := old.DeepCopy()
	n.Type = corev1.SecretTypeBasicAuth
	n.Data = map[string][]byte{"username": []byte("u")}
	checkErrs(t, sec.ValidateUpdate(ctx, n, old), wantErr{"type", field.ErrorTypeInvalid})
}

func TestPersistentVolumeClaim(t *testing.T) {
	s := PersistentVolumeClaimStrategy()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "d", ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	s.Default(pvc)
	s.PrepareForCreate(ctx, pvc)
	if errs := s.Validate(ctx, pvc); len(errs) > 0 {
		t.Fatal(errs)
	}
	if pvc.Status.Phase != corev1.ClaimPending || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("pvc = %+v", pvc)
	}
	checkErrs(t, s.Validate(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "d"}}),
		wantErr{"spec.accessModes", field.ErrorTypeRequired}, wantErr{"spec.resources[storage]", field.ErrorTypeRequired})

	bound := pvc.DeepCopy()
	bound.Spec.VolumeName = "pv-1"
	bound.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	if errs := s.ValidateUpdate(ctx, bound, pvc); len(errs) > 0 {
		t.Errorf("binding and growing refused: %v", errs)
	}
	changed := pvc.DeepCopy()
	changed.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	changed.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
	checkErrs(t, s.ValidateUpdate(ctx, changed, pvc),
		wantErr{"spec", field.ErrorTypeForbidden}, wantErr{"spec.resources.requests.storage", field.ErrorTypeForbidden})
}

func TestEndpointsAndEvents(t *testing.T) {
	ep := EndpointsStrategy()
	e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "d"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5"}, {IP: "127.0.0.1"}, {IP: "nope"}},
		Ports:     []corev1.EndpointPort{{Port: 80}},
	}}}
	ep.Default(e)
	if e.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Error("endpoint port protocol not TCP")
	}
	checkErrs(t, ep.Validate(ctx, e),
		wantErr{"subsets[0].addresses[1].ip", field.ErrorTypeInvalid}, wantErr{"subsets[0].addresses[2].ip", field.ErrorTypeInvalid})

	ev := EventStrategy()
	good := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1", Namespace: "d"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "d", Name: "web"}}
	checkErrs(t, ev.Validate(ctx, good))
	bad := good.DeepCopy()
	bad.InvolvedObject.Namespace = "other"
	checkErrs(t, ev.Validate(ctx, bad), wantErr{"involvedObject.namespace", field.ErrorTypeInvalid})
	if f := EventFields(good); f["involvedObject.name"] != "web" || f["involvedObject.kind"] != "Pod" {
		t.Errorf("event fields = %v", f)
	}
}
