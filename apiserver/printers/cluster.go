package printers

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func leaseColumns() []metav1.TableColumnDefinition {
	return cols(nameColumn(), column("Holder", typeString, coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), ageColumn())
}

func leaseRow(l *coordinationv1.Lease, o options) metav1.TableRow {
	return cells(l.Name, stringOr(l.Spec.HolderIdentity, ""), o.age(l))
}

func roleBindingColumns(of string) []metav1.TableColumnDefinition {
	return cols(
		nameColumn(),
		column("Role", typeString, rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
		ageColumn(),
		wideColumn("Users", typeString, "Users the "+of+" grants the role to."),
		wideColumn("Groups", typeString, "Groups the "+of+" grants the role to."),
		wideColumn("ServiceAccounts", typeString, "Service accounts (namespace/name) the "+of+" grants the role to."),
	)
}

func roleBindingRow(rb *rbacv1.RoleBinding, o options) metav1.TableRow {
	return bindingRow(rb, rb.RoleRef, rb.Subjects, o)
}

func clusterRoleBindingRow(crb *rbacv1.ClusterRoleBinding, o options) metav1.TableRow {
	return bindingRow(crb, crb.RoleRef, crb.Subjects, o)
}

// bindingRow is the row of both kinds of role binding: ROLE as Kind/name,
// then subjects by kind.
func bindingRow(m metav1.Object, ref rbacv1.RoleRef, subjects []rbacv1.Subject, o options) metav1.TableRow {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return cells(
		m.GetName(),
		ref.Kind+"/"+ref.Name,
		o.age(m),
		strings.Join(users, ", "),
		strings.Join(groups, ", "),
		strings.Join(sas, ", "),
	)
}

func podDisruptionBudgetColumns() []metav1.TableColumnDefinition {
	spec := policyv1.PodDisruptionBudgetSpec{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("Min Available", typeString, spec["minAvailable"]),
		column("Max Unavailable", typeString, spec["maxUnavailable"]),
		column("Allowed Disruptions", typeInteger, policyv1.PodDisruptionBudgetStatus{}.SwaggerDoc()["disruptionsAllowed"]),
		ageColumn(),
	)
}

func podDisruptionBudgetRow(pdb *policyv1.PodDisruptionBudget, o options) metav1.TableRow {
	minAvailable, maxUnavailable := "N/A", "N/A"
	if v := pdb.Spec.MinAvailable; v != nil {
		minAvailable = v.String()
	}
	if v := pdb.Spec.MaxUnavailable; v != nil {
		maxUnavailable = v.String()
	}
	return cells(pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), o.age(pdb))
}

func priorityClassColumns() []metav1.TableColumnDefinition {
	doc := schedulingv1.PriorityClass{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("Value", typeInteger, doc["value"]),
		column("Global-Default", typeBoolean, doc["globalDefault"]),
		ageColumn(),
		column("PreemptionPolicy", typeString, doc["preemptionPolicy"]),
	)
}

func priorityClassRow(pc *schedulingv1.PriorityClass, o options) metav1.TableRow {
	policy := ""
	if pc.PreemptionPolicy != nil {
		policy = string(*pc.PreemptionPolicy)
	}
	return cells(pc.Name, int64(pc.Value), pc.GlobalDefault, o.age(pc), policy)
}

// Annotations marking the default storage class, current and beta.
const (
	defaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	defaultClassBetaAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

func storageClassColumns() []metav1.TableColumnDefinition {
	doc := storagev1.StorageClass{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("Provisioner", typeString, doc["provisioner"]),
		column("ReclaimPolicy", typeString, doc["reclaimPolicy"]),
		column("VolumeBindingMode", typeString, doc["volumeBindingMode"]),
		column("AllowVolumeExpansion", typeString, doc["allowVolumeExpansion"]),
		ageColumn(),
	)
}

func storageClassRow(sc *storagev1.StorageClass, o options) metav1.TableRow {
	name := sc.Name
	if sc.Annotations[defaultClassAnnotation] == "true" || sc.Annotations[defaultClassBetaAnnotation] == "true" {
		name += " (default)"
	}
	// Unset fields show the values the API defaults them to.
	reclaim := string(corev1.PersistentVolumeReclaimDelete)
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	binding := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		binding = string(*sc.VolumeBindingMode)
	}
	expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return cells(name, sc.Provisioner, reclaim, binding, expansion, o.age(sc))
}

func webhookConfigurationColumns() []metav1.TableColumnDefinition {
	return cols(nameColumn(), column("Webhooks", typeInteger, "Number of webhooks in the configuration."), ageColumn())
}

func mutatingWebhookRow(c *admissionregistrationv1.MutatingWebhookConfiguration, o options) metav1.TableRow {
	return cells(c.Name, int64(len(c.Webhooks)), o.age(c))
}

func validatingWebhookRow(c *admissionregistrationv1.ValidatingWebhookConfiguration, o options) metav1.TableRow {
	return cells(c.Name, int64(len(c.Webhooks)), o.age(c))
}
