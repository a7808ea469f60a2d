package printers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeStatusAndRoles(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	notReady := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}
	pressure := corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}

	tests := []struct {
		name          string
		conditions    []corev1.NodeCondition
		unschedulable bool
		labels        map[string]string
		status, roles string
	}{
		{"ready worker", []corev1.NodeCondition{pressure, ready}, false, nil, "Ready", "<none>"},
		{"not ready", []corev1.NodeCondition{notReady}, false, nil, "NotReady", "<none>"},
		{"no ready condition yet", []corev1.NodeCondition{pressure}, false, nil, "Unknown", "<none>"},
		{"cordoned", []corev1.NodeCondition{ready}, true, nil, "Ready,SchedulingDisabled", "<none>"},
		{"cordoned and not ready", []corev1.NodeCondition{notReady}, true, nil, "NotReady,SchedulingDisabled", "<none>"},
		{"roles from both labels, sorted and unique", []corev1.NodeCondition{ready}, false,
			map[string]string{
				"node-role.kubernetes.io/control-plane": "",
				"node-role.kubernetes.io/etcd":          "true",
				"kubernetes.io/role":                    "etcd",
				"node-role.kubernetes.io/":              "",
				"kubernetes.io/hostname":                "n1",
			}, "Ready", "control-plane,etcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: objMeta("n1")}
			n.Labels = tt.labels
			n.Status.Conditions = tt.conditions
			n.Spec.Unschedulable = tt.unschedulable
			c := wideRow(t, n)
			checkCells(t, c[1:3], []any{tt.status, tt.roles})
		})
	}
}

func TestNodeColumns(t *testing.T) {
	n := &corev1.Node{ObjectMeta: objMeta("n1")}
	n.Namespace = ""
	checkColumns(t, n,
		[]string{"Name", "Status", "Roles", "Age", "Version"},
		[]string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"})
	checkCells(t, wideRow(t, n), []any{"n1", "Unknown", "<none>", "60m", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"})

	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Debian GNU/Linux 13",
		KernelVersion: "6.12.0", ContainerRuntimeVersion: "cairn://0.1"}
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "n1"},
		{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
		{Type: corev1.NodeExternalIP, Address: "203.0.113.7"},
	}
	checkCells(t, wideRow(t, n)[4:], []any{"v1.37.2", "10.0.0.1", "203.0.113.7", "Debian GNU/Linux 13", "6.12.0", "cairn://0.1"})
}
