package printers

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func deploymentColumns() []metav1.TableColumnDefinition {
	return columns(cols(
		nameColumn(),
		column("Ready", typeString, "Ready pods out of desired pods."),
		column("Up-to-date", typeString, appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		column("Available", typeString, appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		ageColumn(),
	), templateColumns(appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]))
}

func deploymentRow(d *appsv1.Deployment, o options) metav1.TableRow {
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	// Unlike the other workloads, kubectl shows an empty deployment
	// selector as nothing rather than <none>.
	selector := "<invalid>"
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = sel.String()
	}
	return cells(
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicaCount(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		o.age(d),
		names, images, selector,
	)
}

func replicaSetColumns() []metav1.TableColumnDefinition {
	return columns(cols(
		nameColumn(),
		column("Desired", typeInteger, appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		column("Current", typeInteger, appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		column("Ready", typeInteger, appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn(),
	), templateColumns(appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]))
}

func replicaSetRow(rs *appsv1.ReplicaSet, o options) metav1.TableRow {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return cells(
		rs.Name,
		replicaCount(rs.Spec.Replicas),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		o.age(rs),
		names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
	)
}

func statefulSetColumns() []metav1.TableColumnDefinition {
	return columns(cols(
		nameColumn(),
		column("Ready", typeString, "Ready pods out of desired pods."),
		ageColumn(),
	), templateColumns(""))
}

func statefulSetRow(ss *appsv1.StatefulSet, o options) metav1.TableRow {
	names, images := containerCells(ss.Spec.Template.Spec.Containers)
	return cells(
		ss.Name,
		fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, replicaCount(ss.Spec.Replicas)),
		o.age(ss),
		names, images,
	)
}

func daemonSetColumns() []metav1.TableColumnDefinition {
	status := appsv1.DaemonSetStatus{}.SwaggerDoc()
	return columns(cols(
		nameColumn(),
		column("Desired", typeInteger, status["desiredNumberScheduled"]),
		column("Current", typeInteger, status["currentNumberScheduled"]),
		column("Ready", typeInteger, status["numberReady"]),
		column("Up-to-date", typeInteger, status["updatedNumberScheduled"]),
		column("Available", typeInteger, status["numberAvailable"]),
		column("Node Selector", typeString, corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]),
		ageColumn(),
	), templateColumns(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]))
}

func daemonSetRow(ds *appsv1.DaemonSet, o options) metav1.TableRow {
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return cells(
		ds.Name,
		int64(ds.Status.DesiredNumberScheduled),
		int64(ds.Status.CurrentNumberScheduled),
		int64(ds.Status.NumberReady),
		int64(ds.Status.UpdatedNumberScheduled),
		int64(ds.Status.NumberAvailable),
		labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		o.age(ds),
		names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
	)
}

func replicationControllerColumns() []metav1.TableColumnDefinition {
	return columns(cols(
		nameColumn(),
		column("Desired", typeInteger, corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]),
		column("Current", typeInteger, corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]),
		column("Ready", typeInteger, corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn(),
	), templateColumns(corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]))
}

func replicationControllerRow(rc *corev1.ReplicationController, o options) metav1.TableRow {
	var containers []corev1.Container
	if rc.Spec.Template != nil {
		containers = rc.Spec.Template.Spec.Containers
	}
	names, images := containerCells(containers)
	return cells(
		rc.Name,
		replicaCount(rc.Spec.Replicas),
		int64(rc.Status.Replicas),
		int64(rc.Status.ReadyReplicas),
		o.age(rc),
		names, images, labels.FormatLabels(rc.Spec.Selector),
	)
}

func controllerRevisionColumns() []metav1.TableColumnDefinition {
	return cols(
		nameColumn(),
		column("Controller", typeString, "The object that owns this revision."),
		column("Revision", typeString, appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
		ageColumn(),
	)
}

func controllerRevisionRow(cr *appsv1.ControllerRevision, o options) metav1.TableRow {
	controller := none
	if ref := metav1.GetControllerOf(cr); ref != nil {
		controller = ref.Name
		// Shown as kind.group/name, e.g. statefulset.apps/web.
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
			if gk := gv.WithKind(ref.Kind).GroupKind(); !gk.Empty() {
				controller = strings.ToLower(gk.String()) + "/" + ref.Name
			}
		}
	}
	return cells(cr.Name, controller, cr.Revision, o.age(cr))
}
