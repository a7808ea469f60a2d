package printers

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// printerFor returns the printer of obj's kind, or the default table.
// obj only selects the printer; for lists it is a zero item.
func printerFor(obj runtime.Object) printer {
	switch obj.(type) {
	// core/v1
	case *corev1.Pod:
		return typed(podColumns(), podRow)
	case *corev1.Node:
		return typed(nodeColumns(), nodeRow)
	case *corev1.Service:
		return typed(serviceColumns(), serviceRow)
	case *corev1.Endpoints:
		return typed(endpointsColumns(), endpointsRow)
	case *corev1.Event:
		return typed(eventColumns(), eventRow)
	case *corev1.Namespace:
		return typed(namespaceColumns(), namespaceRow)
	case *corev1.ConfigMap:
		return typed(configMapColumns(), configMapRow)
	case *corev1.Secret:
		return typed(secretColumns(), secretRow)
	case *corev1.ServiceAccount:
		return typed(serviceAccountColumns(), serviceAccountRow)
	case *corev1.PersistentVolumeClaim:
		return typed(persistentVolumeClaimColumns(), persistentVolumeClaimRow)
	case *corev1.PersistentVolume:
		return typed(persistentVolumeColumns(), persistentVolumeRow)
	case *corev1.ReplicationController:
		return typed(replicationControllerColumns(), replicationControllerRow)
	case *corev1.PodTemplate:
		return typed(podTemplateColumns(), podTemplateRow)
	case *corev1.ResourceQuota:
		return typed(resourceQuotaColumns(), resourceQuotaRow)

	// apps/v1
	case *appsv1.Deployment:
		return typed(deploymentColumns(), deploymentRow)
	case *appsv1.ReplicaSet:
		return typed(replicaSetColumns(), replicaSetRow)
	case *appsv1.StatefulSet:
		return typed(statefulSetColumns(), statefulSetRow)
	case *appsv1.DaemonSet:
		return typed(daemonSetColumns(), daemonSetRow)
	case *appsv1.ControllerRevision:
		return typed(controllerRevisionColumns(), controllerRevisionRow)

	// batch/v1
	case *batchv1.Job:
		return typed(jobColumns(), jobRow)
	case *batchv1.CronJob:
		return typed(cronJobColumns(), cronJobRow)

	// networking and discovery
	case *discoveryv1.EndpointSlice:
		return typed(endpointSliceColumns(), endpointSliceRow)
	case *networkingv1.Ingress:
		return typed(ingressColumns(), ingressRow)
	case *networkingv1.IngressClass:
		return typed(ingressClassColumns(), ingressClassRow)
	case *networkingv1.NetworkPolicy:
		return typed(networkPolicyColumns(), networkPolicyRow)

	// other groups
	case *eventsv1.Event:
		return typed(eventColumns(), eventsV1Row)
	case *coordinationv1.Lease:
		return typed(leaseColumns(), leaseRow)
	case *rbacv1.RoleBinding:
		return typed(roleBindingColumns("role binding"), roleBindingRow)
	case *rbacv1.ClusterRoleBinding:
		return typed(roleBindingColumns("cluster role binding"), clusterRoleBindingRow)
	case *policyv1.PodDisruptionBudget:
		return typed(podDisruptionBudgetColumns(), podDisruptionBudgetRow)
	case *schedulingv1.PriorityClass:
		return typed(priorityClassColumns(), priorityClassRow)
	case *storagev1.StorageClass:
		return typed(storageClassColumns(), storageClassRow)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return typed(webhookConfigurationColumns(), mutatingWebhookRow)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return typed(webhookConfigurationColumns(), validatingWebhookRow)
	}
	// Roles, ClusterRoles and everything else.
	return defaultPrinter()
}
