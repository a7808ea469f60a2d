package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPersistentVolumeClaim(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	tests := []struct {
		name string
		pvc  corev1.PersistentVolumeClaim
		want []any // STATUS .. VOLUMEMODE without AGE
	}{
		{"pending without class", corev1.PersistentVolumeClaim{
			Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
			[]any{"Pending", "", "", "", "", "<unset>", "<unset>"}},
		{"bound shows the volume's capacity and modes", corev1.PersistentVolumeClaim{
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", StorageClassName: ptr("fast"),
				VolumeAttributesClassName: ptr("gold"), VolumeMode: &block},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOnce},
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
			[]any{"Bound", "pv-1", "10Gi", "RWO,RWX", "fast", "gold", "Block"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvc := tt.pvc
			pvc.ObjectMeta = objMeta("data")
			c := wideRow(t, &pvc)
			checkCells(t, append(c[1:7:7], c[8]), tt.want)
		})
	}

	t.Run("beta class annotation wins, deletion shows Terminating", func(t *testing.T) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"), Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("fast")}}
		pvc.Annotations = map[string]string{"volume.beta.kubernetes.io/storage-class": "slow"}
		pvc.DeletionTimestamp = agoPtr(time.Second)
		c := wideRow(t, pvc)
		checkCells(t, []any{c[1], c[5]}, []any{"Terminating", "slow"})
	})
	checkColumns(t, &corev1.PersistentVolumeClaim{},
		[]string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age"},
		[]string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode"})
}

func TestPersistentVolume(t *testing.T) {
	pv := &corev1.PersistentVolume{ObjectMeta: objMeta("pv-1"), Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: "data"},
		StorageClassName:              "fast",
	}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	pv.Namespace = ""
	checkColumns(t, pv,
		[]string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age"},
		[]string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode"})
	checkCells(t, wideRow(t, pv), []any{"pv-1", "10Gi", "RWOP", "Retain", "Bound", "default/data", "fast", "<unset>", "", "60m", "<unset>"})
}
