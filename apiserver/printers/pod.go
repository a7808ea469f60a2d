package printers

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeLostReason is the pod status reason the node lifecycle controller
// sets on pods of an unreachable node; kubectl shows such pods, once
// deleted, as Unknown rather than Terminating since nobody can stop them.
const nodeLostReason = "NodeLost"

func podColumns() []metav1.TableColumnDefinition {
	return cols(
		nameColumn(),
		column("Ready", typeString, "Ready containers out of all containers, sidecars included."),
		column("Status", typeString, "The pod's phase, or what its containers are waiting or failing on."),
		column("Restarts", typeString, "How many times the pod's containers restarted, and how long ago the last restart was."),
		ageColumn(),
		wideColumn("IP", typeString, corev1.PodStatus{}.SwaggerDoc()["podIP"]),
		wideColumn("Node", typeString, corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
		wideColumn("Nominated Node", typeString, corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
		wideColumn("Readiness Gates", typeString, corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
	)
}

func podRow(pod *corev1.Pod, o options) metav1.TableRow {
	s := summarizePod(pod)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, o.since(s.lastRestart))
	}
	row := cells(
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.status,
		restarts,
		o.age(pod),
		orNone(podIP(pod)),
		orNone(pod.Spec.NodeName),
		orNone(pod.Status.NominatedNodeName),
		readinessGates(pod),
	)
	// Row conditions let clients tell finished pods apart without parsing
	// STATUS, which may show a container reason instead of the phase.
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = []metav1.TableRowCondition{{
			Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
			Reason: string(corev1.PodSucceeded), Message: "Every container of the pod exited successfully.",
		}}
	case corev1.PodFailed:
		row.Conditions = []metav1.TableRowCondition{{
			Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
			Reason: string(corev1.PodFailed), Message: "The pod ended in failure.",
		}}
	}
	return row
}

// podIP is the pod's primary IP. Clients that predate dual stack set only
// status.podIP, which the API copies into podIPs; read both.
func podIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return pod.Status.PodIP
}

// readinessGates shows how many of the pod's readiness gates have their
// condition true, e.g. "1/2".
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return none
	}
	met := 0
	for _, gate := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == gate.ConditionType {
				if c.Status == corev1.ConditionTrue {
					met++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
}

// podConditionTrue reports whether the pod has condition t with status True.
func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
