package registry

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

func TestEveryResourceAgreesWithClientGoScheme(t *testing.T) {
	for _, r := range All() {
		t.Run(r.GVR.String(), func(t *testing.T) {
			for _, c := range []struct {
				obj  runtime.Object
				kind string
			}{{r.New(), r.Kind}, {r.NewList(), r.ListKind}} {
				gvks, _, err := scheme.Scheme.ObjectKinds(c.obj)
				if err != nil {
					t.Fatalf("%T not in client-go's scheme: %v", c.obj, err)
				}
				want := r.GVR.GroupVersion().WithKind(c.kind)
				found := false
				for _, g := range gvks {
					found = found || g == want
				}
				if !found {
					t.Errorf("%T has kinds %v, want %v", c.obj, gvks, want)
				}
			}
			if _, err := meta.ListAccessor(r.NewList()); err != nil {
				t.Errorf("NewList is not a list: %v", err)
			}
			if r.New() == r.New() {
				t.Error("New must return a fresh object each call")
			}
		})
	}
}

func TestCatalogueNamesMatchKubernetes(t *testing.T) {
	tests := []struct {
		group, resource string
		namespaced      bool
		short           []string
		all             bool
		subresources    []string
	}{
		{"", "namespaces", false, []string{"ns"}, false, []string{"status", "finalize"}},
		{"", "pods", true, []string{"po"}, true, []string{"status", "ephemeralcontainers", "binding", "log", "eviction", "exec", "attach", "portforward"}},
		{"", "nodes", false, []string{"no"}, false, []string{"status"}},
		{"", "services", true, []string{"svc"}, true, []string{"status"}},
		{"", "endpoints", true, []string{"ep"}, false, nil},
		{"", "configmaps", true, []string{"cm"}, false, nil},
		{"", "secrets", true, nil, false, nil},
		{"", "serviceaccounts", true, []string{"sa"}, false, []string{"token"}},
		{"", "events", true, []string{"ev"}, false, nil},
		{"", "persistentvolumeclaims", true, []string{"pvc"}, false, []string{"status"}},
		{"apps", "deployments", true, []string{"deploy"}, true, []string{"status", "scale"}},
		{"apps", "replicasets", true, []string{"rs"}, true, []string{"status", "scale"}},
		{"apps", "statefulsets", true, []string{"sts"}, true, []string{"status", "scale"}},
		{"apps", "daemonsets", true, []string{"ds"}, true, []string{"status"}},
		{"apps", "controllerrevisions", true, nil, false, nil},
		{"batch", "jobs", true, nil, true, []string{"status"}},
		{"batch", "cronjobs", true, []string{"cj"}, true, []string{"status"}},
		{"coordination.k8s.io", "leases", true, nil, false, nil},
		{"discovery.k8s.io", "endpointslices", true, nil, false, nil},
		{"rbac.authorization.k8s.io", "roles", true, nil, false, nil},
		{"rbac.authorization.k8s.io", "rolebindings", true, nil, false, nil},
		{"rbac.authorization.k8s.io", "clusterroles", false, nil, false, nil},
		{"rbac.authorization.k8s.io", "clusterrolebindings", false, nil, false, nil},
		{"scheduling.k8s.io", "priorityclasses", false, []string{"pc"}, false, nil},
	}
	all := All()
	if len(all) != len(tests) {
		t.Errorf("All() has %d resources, table %d", len(all), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			r, ok := Lookup(tt.group, "v1", tt.resource)
			if !ok {
				t.Fatal("not found")
			}
			if i < len(all) && all[i].GVR != r.GVR {
				t.Errorf("All()[%d] = %v: order changed", i, all[i].GVR)
			}
			if r.Namespaced != tt.namespaced {
				t.Errorf("namespaced = %v", r.Namespaced)
			}
			if !equal(r.ShortNames, tt.short) || !equal(r.Subresources, tt.subresources) {
				t.Errorf("short names %v, subresources %v", r.ShortNames, r.Subresources)
			}
			if (len(r.Categories) == 1 && r.Categories[0] == "all") != tt.all {
				t.Errorf("categories = %v", r.Categories)
			}
			if (r.Scale != nil) != r.HasSubresource("scale") {
				t.Error("Scale set without the scale subresource, or the reverse")
			}
			for sub, o := range r.ObjectSubresources {
				if !r.HasSubresource(sub) || sub == "status" || o.Strategy == nil || len(o.Fields) == 0 {
					t.Errorf("object subresource %q: listed %v, rules %+v", sub, r.HasSubresource(sub), o)
				}
			}
			if k, ok := LookupKind(r.GVK()); !ok || k.GVR != r.GVR {
				t.Errorf("LookupKind(%v) = %v", r.GVK(), k)
			}
			for _, s := range tt.short {
				if k, ok := LookupShortName(s); !ok || k.GVR != r.GVR {
					t.Errorf("LookupShortName(%q) = %v", s, k)
				}
			}
		})
	}
	if _, ok := Lookup("apps", "v1beta1", "deployments"); ok {
		t.Error("unserved version found")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// samples are minimal valid objects of every resource, as a user would
// write them (before defaults).
func samples() map[schema.GroupVersionResource]runtime.Object {
	om := metav1.ObjectMeta{Name: "x", Namespace: "default", UID: "u-1"}
	cluster := metav1.ObjectMeta{Name: "x", UID: "u-1"}
	labels := map[string]string{"app": "x"}
	pod := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod}
	sel := &metav1.LabelSelector{MatchLabels: labels}
	jobPod := *tmpl.DeepCopy()
	jobPod.Spec.RestartPolicy = corev1.RestartPolicyNever
	gvr := func(gv schema.GroupVersion, r string) schema.GroupVersionResource { return gv.WithResource(r) }
	core, apps := corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion
	return map[schema.GroupVersionResource]runtime.Object{
		gvr(core, "namespaces"): &corev1.Namespace{ObjectMeta: cluster},
		gvr(core, "pods"):       &corev1.Pod{ObjectMeta: om, Spec: pod},
		gvr(core, "nodes"):      &corev1.Node{ObjectMeta: cluster},
		gvr(core, "services"): &corev1.Service{ObjectMeta: om, Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}},
		gvr(core, "endpoints"):       &corev1.Endpoints{ObjectMeta: om},
		gvr(core, "configmaps"):      &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"k": "v"}},
		gvr(core, "secrets"):         &corev1.Secret{ObjectMeta: om, StringData: map[string]string{"k": "v"}},
		gvr(core, "serviceaccounts"): &corev1.ServiceAccount{ObjectMeta: om},
		gvr(core, "events"): &corev1.Event{ObjectMeta: om, InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: "x"}, Reason: "Started"},
		gvr(core, "persistentvolumeclaims"): &corev1.PersistentVolumeClaim{ObjectMeta: om, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		gvr(apps, "deployments"):  &appsv1.Deployment{ObjectMeta: om, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}},
		gvr(apps, "replicasets"):  &appsv1.ReplicaSet{ObjectMeta: om, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}},
		gvr(apps, "statefulsets"): &appsv1.StatefulSet{ObjectMeta: om, Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl, ServiceName: "x"}},
		gvr(apps, "daemonsets"):   &appsv1.DaemonSet{ObjectMeta: om, Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}},
		gvr(apps, "controllerrevisions"): &appsv1.ControllerRevision{ObjectMeta: om, Revision: 1,
			Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)}},
		gvr(batchv1.SchemeGroupVersion, "jobs"): &batchv1.Job{ObjectMeta: om, Spec: batchv1.JobSpec{Template: jobPod}},
		gvr(batchv1.SchemeGroupVersion, "cronjobs"): &batchv1.CronJob{ObjectMeta: om, Spec: batchv1.CronJobSpec{
			Schedule: "@daily", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobPod}}}},
		gvr(coordinationv1.SchemeGroupVersion, "leases"): &coordinationv1.Lease{ObjectMeta: om, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To[int32](15)}},
		gvr(discoveryv1.SchemeGroupVersion, "endpointslices"): &discoveryv1.EndpointSlice{ObjectMeta: om, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}}}, Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}},
		gvr(rbacv1.SchemeGroupVersion, "roles"): &rbacv1.Role{ObjectMeta: om, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}},
		gvr(rbacv1.SchemeGroupVersion, "rolebindings"): &rbacv1.RoleBinding{ObjectMeta: om,
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "x"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}},
		gvr(rbacv1.SchemeGroupVersion, "clusterroles"): &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:x"}, Rules: []rbacv1.PolicyRule{{
			NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}}},
		gvr(rbacv1.SchemeGroupVersion, "clusterrolebindings"): &rbacv1.ClusterRoleBinding{ObjectMeta: cluster,
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "system:x"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "d", Namespace: "kube-system"}}},
		gvr(schedulingv1.SchemeGroupVersion, "priorityclasses"): &schedulingv1.PriorityClass{ObjectMeta: cluster, Value: 1000},
	}
}

// TestSampleObjectsGoThroughCreateUpdateAndStatus runs one plain object of
// every kind through the calls the HTTP layer makes, in its order.
func TestSampleObjectsGoThroughCreateUpdateAndStatus(t *testing.T) {
	ctx := context.Background()
	objs := samples()
	for _, r := range All() {
		t.Run(r.GVR.String(), func(t *testing.T) {
			obj, ok := objs[r.GVR]
			if !ok {
				t.Fatal("no sample")
			}
			s := r.Strategy
			s.Default(obj)
			s.PrepareForCreate(ctx, obj)
			if errs := s.Validate(ctx, obj); len(errs) > 0 {
				t.Fatalf("create: %v", errs)
			}
			m, _ := meta.Accessor(obj)
			m.SetResourceVersion("5")

			upd := obj.DeepCopyObject()
			s.Default(upd)
			s.PrepareForUpdate(ctx, upd, obj)
			if errs := s.ValidateUpdate(ctx, upd, obj); len(errs) > 0 {
				t.Fatalf("no-op update: %v", errs)
			}
			if s.SpecChanged(upd, obj) {
				t.Error("a no-op update changed the spec")
			}
			if r.HasSubresource("status") {
				st := obj.DeepCopyObject()
				s.PrepareStatusForUpdate(ctx, st, obj)
				if errs := s.ValidateUpdate(ctx, st, obj); len(errs) > 0 {
					t.Fatalf("status update: %v", errs)
				}
			}
			f := r.SelectableFields(obj)
			if f["metadata.name"] != m.GetName() {
				t.Errorf("fields = %v", f)
			}
			if _, has := f["metadata.namespace"]; has != r.Namespaced {
				t.Errorf("metadata.namespace selectable = %v for namespaced = %v", has, r.Namespaced)
			}
			if r.Scale != nil {
				sc, err := r.Scale.Scale(obj)
				if err != nil || sc.Spec.Replicas != 1 {
					t.Errorf("scale = %+v, %v", sc, err)
				}
			}
		})
	}
}

func TestCatalogueIndexesGivenResources(t *testing.T) {
	c := NewCatalogue(All())
	if len(c.Resources()) != len(All()) {
		t.Error("Resources() lost some")
	}
	if r, ok := c.Lookup("", "v1", "pods"); !ok || r.Kind != "Pod" {
		t.Error("pods not found")
	}
	if r, ok := c.LookupShortName("deploy"); !ok || r.GVR.Resource != "deployments" {
		t.Error("deploy not found")
	}
	if _, ok := c.LookupShortName("nope"); ok {
		t.Error("found unknown short name")
	}
}
