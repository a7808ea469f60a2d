package printers

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func namespaceColumns() []metav1.TableColumnDefinition {
	return cols(nameColumn(), column("Status", typeString, corev1.NamespaceStatus{}.SwaggerDoc()["phase"]), ageColumn())
}

func namespaceRow(ns *corev1.Namespace, o options) metav1.TableRow {
	return cells(ns.Name, string(ns.Status.Phase), o.age(ns))
}

func configMapColumns() []metav1.TableColumnDefinition {
	return cols(nameColumn(), column("Data", typeString, "Number of keys, text and binary."), ageColumn())
}

func configMapRow(cm *corev1.ConfigMap, o options) metav1.TableRow {
	return cells(cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), o.age(cm))
}

func secretColumns() []metav1.TableColumnDefinition {
	doc := corev1.Secret{}.SwaggerDoc()
	return cols(nameColumn(), column("Type", typeString, doc["type"]), column("Data", typeString, doc["data"]), ageColumn())
}

func secretRow(s *corev1.Secret, o options) metav1.TableRow {
	// stringData is write-only and merged into data when stored; count it
	// too so a secret not yet stored shows what it will hold.
	keys := len(s.Data)
	for k := range s.StringData {
		if _, dup := s.Data[k]; !dup {
			keys++
		}
	}
	return cells(s.Name, string(s.Type), int64(keys), o.age(s))
}

func serviceAccountColumns() []metav1.TableColumnDefinition {
	return cols(nameColumn(), column("Secrets", typeString, corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), ageColumn())
}

func serviceAccountRow(sa *corev1.ServiceAccount, o options) metav1.TableRow {
	return cells(sa.Name, int64(len(sa.Secrets)), o.age(sa))
}

func podTemplateColumns() []metav1.TableColumnDefinition {
	return cols(
		nameColumn(),
		column("Containers", typeString, "Names of the containers in the template."),
		column("Images", typeString, "Images of the containers in the template."),
		column("Pod Labels", typeString, "Labels of the pods made from the template."),
	)
}

func podTemplateRow(pt *corev1.PodTemplate, o options) metav1.TableRow {
	names, images := containerCells(pt.Template.Spec.Containers)
	return cells(pt.Name, names, images, labels.FormatLabels(pt.Template.Labels))
}

func resourceQuotaColumns() []metav1.TableColumnDefinition {
	return cols(
		nameColumn(),
		column("Request", typeString, "Used out of hard quota for each resource other than limits."),
		column("Limit", typeString, "Used out of hard quota for each limits.* resource."),
		ageColumn(),
	)
}

func resourceQuotaRow(rq *corev1.ResourceQuota, o options) metav1.TableRow {
	names := make([]string, 0, len(rq.Status.Hard))
	for name := range rq.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, name := range names {
		used := rq.Status.Used[corev1.ResourceName(name)]
		hard := rq.Status.Hard[corev1.ResourceName(name)]
		entry := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits.") {
			limits = append(limits, entry)
		} else {
			requests = append(requests, entry)
		}
	}
	return cells(rq.Name, strings.Join(requests, ", "), strings.Join(limits, ", "), o.age(rq))
}
