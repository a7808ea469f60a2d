package printers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestNamespace(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: objMeta("prod"), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	checkColumns(t, ns, []string{"Name", "Status", "Age"}, []string{"Name", "Status", "Age"})
	checkCells(t, wideRow(t, ns), []any{"prod", "Terminating", "60m"})
}

func TestConfigMapSecretServiceAccount(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: objMeta("cfg"), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": nil}}
	checkColumns(t, cm, []string{"Name", "Data", "Age"}, []string{"Name", "Data", "Age"})
	checkCells(t, wideRow(t, cm), []any{"cfg", int64(3), "60m"})

	s := &corev1.Secret{ObjectMeta: objMeta("tls"), Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}, StringData: map[string]string{"tls.key": "x", "ca.crt": "y"}}
	checkColumns(t, s, []string{"Name", "Type", "Data", "Age"}, []string{"Name", "Type", "Data", "Age"})
	checkCells(t, wideRow(t, s), []any{"tls", "kubernetes.io/tls", int64(3), "60m"})

	sa := &corev1.ServiceAccount{ObjectMeta: objMeta("builder"), Secrets: []corev1.ObjectReference{{Name: "t"}}}
	checkColumns(t, sa, []string{"Name", "Secrets", "Age"}, []string{"Name", "Secrets", "Age"})
	checkCells(t, wideRow(t, sa), []any{"builder", int64(1), "60m"})
}

func TestPodTemplateAndResourceQuota(t *testing.T) {
	pt := &corev1.PodTemplate{ObjectMeta: objMeta("tmpl"), Template: template()}
	pt.Template.Labels = map[string]string{"app": "web"}
	checkColumns(t, pt, []string{"Name", "Containers", "Images", "Pod Labels"}, []string{"Name", "Containers", "Images", "Pod Labels"})
	checkCells(t, wideRow(t, pt), []any{"tmpl", "web,log", "nginx:1.27,fluent:2", "app=web"})

	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	rq := &corev1.ResourceQuota{ObjectMeta: objMeta("quota"), Status: corev1.ResourceQuotaStatus{
		Hard: corev1.ResourceList{"pods": q("10"), "requests.cpu": q("4"), "limits.memory": q("8Gi"), "limits.cpu": q("8")},
		Used: corev1.ResourceList{"pods": q("3"), "requests.cpu": q("500m"), "limits.cpu": q("1")},
	}}
	checkColumns(t, rq, []string{"Name", "Request", "Limit", "Age"}, []string{"Name", "Request", "Limit", "Age"})
	checkCells(t, wideRow(t, rq), []any{"quota", "pods: 3/10, requests.cpu: 500m/4", "limits.cpu: 1/8, limits.memory: 0/8Gi", "60m"})
}
