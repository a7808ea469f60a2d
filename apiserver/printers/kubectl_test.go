package printers

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cliprinters "k8s.io/cli-runtime/pkg/printers"
)

// TestKubectlPrintsOurTables renders tables with kubectl's own table
// printer, to check what a user of `kubectl get` sees: wide columns hidden
// unless -o wide, and --show-labels reading the row metadata.
func TestKubectlPrintsOurTables(t *testing.T) {
	pods := &corev1.PodList{Items: []corev1.Pod{
		*testPod().phase(corev1.PodRunning).statuses(restarted(running("app", true), 2, 5*time.Minute)).obj(),
		*testPod().inits("migrate").phase(corev1.PodPending).
			initStatuses(restarted(waiting("migrate", "CrashLoopBackOff"), 3, 40*time.Second)).obj(),
	}}
	pods.Items[0].Labels = map[string]string{"app": "web"}
	pods.Items[0].Spec.NodeName = "n1"
	pods.Items[0].Status.PodIP = "10.1.0.4"
	pods.Items[1].Name = "db"

	tests := []struct {
		name string
		opts cliprinters.PrintOptions
		want string
	}{
		{"get", cliprinters.PrintOptions{}, "" +
			"NAME   READY   STATUS                  RESTARTS      AGE\n" +
			"web    1/1     Running                 2 (5m ago)    60m\n" +
			"db     0/1     Init:CrashLoopBackOff   3 (40s ago)   60m\n"},
		{"get -o wide", cliprinters.PrintOptions{Wide: true}, "" +
			"NAME   READY   STATUS                  RESTARTS      AGE   IP         NODE     NOMINATED NODE   READINESS GATES\n" +
			"web    1/1     Running                 2 (5m ago)    60m   10.1.0.4   n1       <none>           <none>\n" +
			"db     0/1     Init:CrashLoopBackOff   3 (40s ago)   60m   <none>     <none>   <none>           <none>\n"},
		{"get --show-labels", cliprinters.PrintOptions{ShowLabels: true}, "" +
			"NAME   READY   STATUS                  RESTARTS      AGE   LABELS\n" +
			"web    1/1     Running                 2 (5m ago)    60m   app=web\n" +
			"db     0/1     Init:CrashLoopBackOff   3 (40s ago)   60m   <none>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// As the kube-apiserver does: every column, metadata by default.
			table := render(t, pods, true)
			if err := SetIncludeObject(table, metav1.IncludeMetadata); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := cliprinters.NewTablePrinter(tt.opts).PrintObj(table, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("kubectl shows\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
}
