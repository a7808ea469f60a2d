package printers

import (
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestLease(t *testing.T) {
	l := &coordinationv1.Lease{ObjectMeta: objMeta("kube-scheduler"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("s1_4f2a")}}
	checkColumns(t, l, []string{"Name", "Holder", "Age"}, []string{"Name", "Holder", "Age"})
	checkCells(t, wideRow(t, l), []any{"kube-scheduler", "s1_4f2a", "60m"})
	l.Spec.HolderIdentity = nil
	checkCells(t, wideRow(t, l), []any{"kube-scheduler", "", "60m"})
}

func TestRolesUseTheDefaultTable(t *testing.T) {
	created := time.Date(2026, 2, 27, 8, 30, 0, 0, time.FixedZone("CET", 3600))
	role := &rbacv1.Role{ObjectMeta: objMeta("pod-reader")}
	role.CreationTimestamp.Time = created
	cr := &rbacv1.ClusterRole{ObjectMeta: objMeta("admin")}
	cr.CreationTimestamp.Time = created
	tests := []struct {
		name string
		obj  runtime.Object
		want []any
	}{
		{"role", role, []any{"pod-reader", "2026-02-27T07:30:00Z"}},
		{"cluster role", cr, []any{"admin", "2026-02-27T07:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkColumns(t, tt.obj, []string{"Name", "Created At"}, []string{"Name", "Created At"})
			checkCells(t, wideRow(t, tt.obj), tt.want)
			if typ := render(t, tt.obj, false).ColumnDefinitions[1].Type; typ != "date" {
				t.Errorf("CREATED AT type = %q, want date", typ)
			}
		})
	}
}

func TestRoleBindings(t *testing.T) {
	subjects := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, Name: "alice"},
		{Kind: rbacv1.GroupKind, Name: "devs"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "builder"},
		{Kind: rbacv1.UserKind, Name: "bob"},
	}
	tests := []struct {
		name string
		obj  runtime.Object
		want []any
	}{
		{"role binding", &rbacv1.RoleBinding{ObjectMeta: objMeta("read-pods"),
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"}, Subjects: subjects},
			[]any{"read-pods", "Role/pod-reader", "60m", "alice, bob", "devs", "ci/builder"}},
		{"cluster role binding", &rbacv1.ClusterRoleBinding{ObjectMeta: objMeta("admins"),
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}},
			[]any{"admins", "ClusterRole/cluster-admin", "60m", "", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkColumns(t, tt.obj, []string{"Name", "Role", "Age"}, []string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"})
			checkCells(t, wideRow(t, tt.obj), tt.want)
		})
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("web"),
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromString("50%"))},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 2}}
	checkColumns(t, pdb, []string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"},
		[]string{"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"})
	checkCells(t, wideRow(t, pdb), []any{"web", "50%", "N/A", int64(2), "60m"})
	pdb.Spec = policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromInt32(1))}
	checkCells(t, wideRow(t, pdb), []any{"web", "N/A", "1", int64(2), "60m"})
}

func TestPriorityClass(t *testing.T) {
	never := corev1.PreemptNever
	pc := &schedulingv1.PriorityClass{ObjectMeta: objMeta("batch"), Value: 1000, GlobalDefault: true, PreemptionPolicy: &never}
	// PREEMPTIONPOLICY shows without -o wide, as with kubectl.
	cols := []string{"Name", "Value", "Global-Default", "Age", "PreemptionPolicy"}
	checkColumns(t, pc, cols, cols)
	checkCells(t, wideRow(t, pc), []any{"batch", int64(1000), true, "60m", "Never"})
}

func TestStorageClass(t *testing.T) {
	sc := &storagev1.StorageClass{ObjectMeta: objMeta("standard"), Provisioner: "rancher.io/local-path"}
	sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	cols := []string{"Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"}
	checkColumns(t, sc, cols, cols)
	checkCells(t, wideRow(t, sc), []any{"standard (default)", "rancher.io/local-path", "Delete", "Immediate", false, "60m"})

	retain, wait := corev1.PersistentVolumeReclaimRetain, storagev1.VolumeBindingWaitForFirstConsumer
	sc.Annotations = nil
	sc.ReclaimPolicy, sc.VolumeBindingMode, sc.AllowVolumeExpansion = &retain, &wait, ptr(true)
	checkCells(t, wideRow(t, sc), []any{"standard", "rancher.io/local-path", "Retain", "WaitForFirstConsumer", true, "60m"})
}

func TestWebhookConfigurations(t *testing.T) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: objMeta("inject"),
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a"}, {Name: "b"}}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: objMeta("policy"),
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a"}}}
	cols := []string{"Name", "Webhooks", "Age"}
	checkColumns(t, m, cols, cols)
	checkCells(t, wideRow(t, m), []any{"inject", int64(2), "60m"})
	checkCells(t, wideRow(t, v), []any{"policy", int64(1), "60m"})
}
