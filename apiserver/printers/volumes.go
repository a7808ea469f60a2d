package printers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func persistentVolumeClaimColumns() []metav1.TableColumnDefinition {
	spec := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()
	status := corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("Status", typeString, status["phase"]),
		column("Volume", typeString, spec["volumeName"]),
		column("Capacity", typeString, status["capacity"]),
		column("Access Modes", typeString, status["accessModes"]),
		column("StorageClass", typeString, spec["storageClassName"]),
		column("VolumeAttributesClass", typeString, spec["volumeAttributesClassName"]),
		ageColumn(),
		wideColumn("VolumeMode", typeString, spec["volumeMode"]),
	)
}

func persistentVolumeClaimRow(pvc *corev1.PersistentVolumeClaim, o options) metav1.TableRow {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	// Capacity and access modes are the bound volume's, known once bound.
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity, modes = q.String(), accessModes(pvc.Status.AccessModes)
	}
	return cells(
		pvc.Name,
		phase,
		pvc.Spec.VolumeName,
		capacity,
		modes,
		storageClassOf(pvc.Annotations, pvc.Spec.StorageClassName),
		stringOr(pvc.Spec.VolumeAttributesClassName, unset),
		o.age(pvc),
		volumeModeString(pvc.Spec.VolumeMode),
	)
}

func persistentVolumeColumns() []metav1.TableColumnDefinition {
	spec := corev1.PersistentVolumeSpec{}.SwaggerDoc()
	status := corev1.PersistentVolumeStatus{}.SwaggerDoc()
	return cols(
		nameColumn(),
		column("Capacity", typeString, spec["capacity"]),
		column("Access Modes", typeString, spec["accessModes"]),
		column("Reclaim Policy", typeString, spec["persistentVolumeReclaimPolicy"]),
		column("Status", typeString, status["phase"]),
		column("Claim", typeString, spec["claimRef"]),
		column("StorageClass", typeString, spec["storageClassName"]),
		column("VolumeAttributesClass", typeString, spec["volumeAttributesClassName"]),
		column("Reason", typeString, status["reason"]),
		ageColumn(),
		wideColumn("VolumeMode", typeString, spec["volumeMode"]),
	)
}

func persistentVolumeRow(pv *corev1.PersistentVolume, o options) metav1.TableRow {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	var class *string
	if pv.Spec.StorageClassName != "" {
		class = &pv.Spec.StorageClassName
	}
	return cells(
		pv.Name,
		size.String(),
		accessModes(pv.Spec.AccessModes),
		string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase,
		claim,
		storageClassOf(pv.Annotations, class),
		stringOr(pv.Spec.VolumeAttributesClassName, unset),
		pv.Status.Reason,
		o.age(pv),
		volumeModeString(pv.Spec.VolumeMode),
	)
}

// volumeModeString shows an optional volume mode, <unset> when nil.
func volumeModeString(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return unset
	}
	return string(*m)
}

// stringOr returns *s, or def when s is nil.
func stringOr(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}
