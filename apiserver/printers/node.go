package printers

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node role labels: node-role.kubernetes.io/<role> (any value) and the
// older kubernetes.io/role=<role>.
const (
	nodeRolePrefix = "node-role.kubernetes.io/"
	nodeRoleLabel  = "kubernetes.io/role"
)

func nodeColumns() []metav1.TableColumnDefinition {
	info := corev1.NodeSystemInfo{}.SwaggerDoc()
	addresses := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	return cols(
		nameColumn(),
		column("Status", typeString, "Whether the node is Ready, and SchedulingDisabled when cordoned."),
		column("Roles", typeString, "Roles from the node's node-role.kubernetes.io/ labels."),
		ageColumn(),
		column("Version", typeString, info["kubeletVersion"]),
		wideColumn("Internal-IP", typeString, addresses),
		wideColumn("External-IP", typeString, addresses),
		wideColumn("OS-Image", typeString, info["osImage"]),
		wideColumn("Kernel-Version", typeString, info["kernelVersion"]),
		wideColumn("Container-Runtime", typeString, info["containerRuntimeVersion"]),
	)
}

func nodeRow(n *corev1.Node, o options) metav1.TableRow {
	info := n.Status.NodeInfo
	return cells(
		n.Name,
		nodeStatus(n),
		orNone(strings.Join(nodeRoles(n), ",")),
		o.age(n),
		info.KubeletVersion,
		orNone(nodeAddress(n, corev1.NodeInternalIP)),
		orNone(nodeAddress(n, corev1.NodeExternalIP)),
		orUnknown(info.OSImage),
		orUnknown(info.KernelVersion),
		orUnknown(info.ContainerRuntimeVersion),
	)
}

// nodeStatus is Ready, NotReady or Unknown (no Ready condition yet),
// followed by ",SchedulingDisabled" for a cordoned node.
func nodeStatus(n *corev1.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status = "Ready"
			if c.Status != corev1.ConditionTrue {
				status = "NotReady"
			}
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles returns the node's roles, sorted and without duplicates.
func nodeRoles(n *corev1.Node) []string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, nodeRolePrefix):
			roles = append(roles, strings.TrimPrefix(k, nodeRolePrefix))
		case k == nodeRoleLabel:
			roles = append(roles, v)
		}
	}
	return sortedUnique(roles)
}

// nodeAddress returns the node's first address of type t.
func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return ""
}

// orUnknown returns s, or "<unknown>" when the node has not reported it.
func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
