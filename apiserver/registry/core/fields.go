package core

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// MetaFields returns the fields every object can be selected by:
// metadata.name and, for namespaced objects, metadata.namespace.
func MetaFields(name, namespace string, namespaced bool) fields.Set {
	set := fields.Set{"metadata.name": name}
	if namespaced {
		set["metadata.namespace"] = namespace
	}
	return set
}

// PodFields returns the fields pods can be selected by, e.g.
// spec.nodeName=n1 for the agent's watch and status.phase=Running.
func PodFields(pod *corev1.Pod) fields.Set {
	set := MetaFields(pod.Name, pod.Namespace, true)
	set["spec.nodeName"] = pod.Spec.NodeName
	set["spec.restartPolicy"] = string(pod.Spec.RestartPolicy)
	set["spec.schedulerName"] = pod.Spec.SchedulerName
	set["spec.serviceAccountName"] = pod.Spec.ServiceAccountName
	set["spec.hostNetwork"] = strconv.FormatBool(pod.Spec.HostNetwork)
	set["status.phase"] = string(pod.Status.Phase)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	set["status.podIP"] = podIP
	set["status.nominatedNodeName"] = pod.Status.NominatedNodeName
	return set
}

// NodeFields returns the fields nodes can be selected by.
func NodeFields(n *corev1.Node) fields.Set {
	set := MetaFields(n.Name, "", false)
	set["spec.unschedulable"] = strconv.FormatBool(n.Spec.Unschedulable)
	return set
}

// NamespaceFields returns the fields namespaces can be selected by.
func NamespaceFields(ns *corev1.Namespace) fields.Set {
	set := MetaFields(ns.Name, "", false)
	set["status.phase"] = string(ns.Status.Phase)
	return set
}

// SecretFields returns the fields secrets can be selected by.
func SecretFields(s *corev1.Secret) fields.Set {
	set := MetaFields(s.Name, s.Namespace, true)
	set["type"] = string(s.Type)
	return set
}

// ServiceFields returns the fields services can be selected by.
func ServiceFields(svc *corev1.Service) fields.Set {
	set := MetaFields(svc.Name, svc.Namespace, true)
	set["spec.clusterIP"] = svc.Spec.ClusterIP
	set["spec.type"] = string(svc.Spec.Type)
	return set
}

// EventFields returns the fields events can be selected by, which is how
// kubectl describe finds the events of one object.
func EventFields(e *corev1.Event) fields.Set {
	set := MetaFields(e.Name, e.Namespace, true)
	set["involvedObject.kind"] = e.InvolvedObject.Kind
	set["involvedObject.namespace"] = e.InvolvedObject.Namespace
	set["involvedObject.name"] = e.InvolvedObject.Name
	set["involvedObject.uid"] = string(e.InvolvedObject.UID)
	set["involvedObject.apiVersion"] = e.InvolvedObject.APIVersion
	set["involvedObject.resourceVersion"] = e.InvolvedObject.ResourceVersion
	set["involvedObject.fieldPath"] = e.InvolvedObject.FieldPath
	set["reason"] = e.Reason
	set["reportingComponent"] = e.ReportingController
	set["source"] = e.Source.Component
	set["type"] = e.Type
	return set
}
