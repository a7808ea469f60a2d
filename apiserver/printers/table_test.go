package printers

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// everyKind has one object of each kind with a printer, and a kind
// without one, each in a list of its own.
func everyKind() []runtime.Object {
	m := objMeta("x")
	return []runtime.Object{
		&corev1.PodList{Items: []corev1.Pod{*testPod().phase(corev1.PodRunning).statuses(running("app", true)).obj()}},
		&corev1.NodeList{Items: []corev1.Node{{ObjectMeta: m}}},
		&corev1.ServiceList{Items: []corev1.Service{{ObjectMeta: m}}},
		&corev1.EndpointsList{Items: []corev1.Endpoints{{ObjectMeta: m}}},
		&corev1.EventList{Items: []corev1.Event{{ObjectMeta: m}}},
		&corev1.NamespaceList{Items: []corev1.Namespace{{ObjectMeta: m}}},
		&corev1.ConfigMapList{Items: []corev1.ConfigMap{{ObjectMeta: m}}},
		&corev1.SecretList{Items: []corev1.Secret{{ObjectMeta: m}}},
		&corev1.ServiceAccountList{Items: []corev1.ServiceAccount{{ObjectMeta: m}}},
		&corev1.PersistentVolumeClaimList{Items: []corev1.PersistentVolumeClaim{{ObjectMeta: m}}},
		&corev1.PersistentVolumeList{Items: []corev1.PersistentVolume{{ObjectMeta: m}}},
		&corev1.ReplicationControllerList{Items: []corev1.ReplicationController{{ObjectMeta: m}}},
		&corev1.PodTemplateList{Items: []corev1.PodTemplate{{ObjectMeta: m}}},
		&corev1.ResourceQuotaList{Items: []corev1.ResourceQuota{{ObjectMeta: m}}},
		&corev1.LimitRangeList{Items: []corev1.LimitRange{{ObjectMeta: m}}},
		&appsv1.DeploymentList{Items: []appsv1.Deployment{{ObjectMeta: m}}},
		&appsv1.ReplicaSetList{Items: []appsv1.ReplicaSet{{ObjectMeta: m}}},
		&appsv1.StatefulSetList{Items: []appsv1.StatefulSet{{ObjectMeta: m}}},
		&appsv1.DaemonSetList{Items: []appsv1.DaemonSet{{ObjectMeta: m}}},
		&appsv1.ControllerRevisionList{Items: []appsv1.ControllerRevision{{ObjectMeta: m}}},
		&batchv1.JobList{Items: []batchv1.Job{{ObjectMeta: m}}},
		&batchv1.CronJobList{Items: []batchv1.CronJob{{ObjectMeta: m}}},
		&discoveryv1.EndpointSliceList{Items: []discoveryv1.EndpointSlice{{ObjectMeta: m}}},
		&networkingv1.IngressList{Items: []networkingv1.Ingress{{ObjectMeta: m}}},
		&networkingv1.IngressClassList{Items: []networkingv1.IngressClass{{ObjectMeta: m}}},
		&networkingv1.NetworkPolicyList{Items: []networkingv1.NetworkPolicy{{ObjectMeta: m}}},
		&eventsv1.EventList{Items: []eventsv1.Event{{ObjectMeta: m}}},
		&coordinationv1.LeaseList{Items: []coordinationv1.Lease{{ObjectMeta: m}}},
		&rbacv1.RoleList{Items: []rbacv1.Role{{ObjectMeta: m}}},
		&rbacv1.ClusterRoleList{Items: []rbacv1.ClusterRole{{ObjectMeta: m}}},
		&rbacv1.RoleBindingList{Items: []rbacv1.RoleBinding{{ObjectMeta: m}}},
		&rbacv1.ClusterRoleBindingList{Items: []rbacv1.ClusterRoleBinding{{ObjectMeta: m}}},
		&policyv1.PodDisruptionBudgetList{Items: []policyv1.PodDisruptionBudget{{ObjectMeta: m}}},
		&schedulingv1.PriorityClassList{Items: []schedulingv1.PriorityClass{{ObjectMeta: m}}},
		&storagev1.StorageClassList{Items: []storagev1.StorageClass{{ObjectMeta: m}}},
		&admissionregistrationv1.MutatingWebhookConfigurationList{Items: []admissionregistrationv1.MutatingWebhookConfiguration{{ObjectMeta: m}}},
		&admissionregistrationv1.ValidatingWebhookConfigurationList{Items: []admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: m}}},
	}
}

func TestEveryKindRowsMatchColumns(t *testing.T) {
	for _, list := range everyKind() {
		for _, wide := range []bool{false, true} {
			table := render(t, list, wide)
			name := reflect.TypeOf(list).Elem().Name()
			if len(table.Rows) != 1 {
				t.Fatalf("%s: %d rows, want 1", name, len(table.Rows))
			}
			if got, want := len(table.Rows[0].Cells), len(table.ColumnDefinitions); got != want {
				t.Errorf("%s wide=%v: %d cells for %d columns", name, wide, got, want)
			}
			for _, c := range table.ColumnDefinitions {
				if !wide && c.Priority != 0 {
					t.Errorf("%s: wide column %q shown without -o wide", name, c.Name)
				}
				if c.Description == "" {
					t.Errorf("%s: column %q has no description", name, c.Name)
				}
			}
			if first := table.ColumnDefinitions[0]; first.Name == "Name" && first.Format != "name" {
				t.Errorf("%s: NAME column has format %q, want name", name, first.Format)
			}
			for i, cell := range table.Rows[0].Cells {
				switch cell.(type) {
				case string, int64, bool:
				default:
					t.Errorf("%s: cell %d is a %T; cells must be strings, int64 or bools", name, i, cell)
				}
			}
		}
	}
}

func TestListAndSingleObjectGiveTheSameRows(t *testing.T) {
	list := &corev1.PodList{Items: []corev1.Pod{
		*testPod().phase(corev1.PodRunning).statuses(running("app", true)).obj(),
		*testPod("a", "b").phase(corev1.PodPending).obj(),
	}}
	list.Items[1].Name = "db"
	fromList := render(t, list, true)
	if len(fromList.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(fromList.Rows))
	}
	for i := range list.Items {
		single := render(t, &list.Items[i], true)
		if !reflect.DeepEqual(single.ColumnDefinitions, fromList.ColumnDefinitions) {
			t.Errorf("columns of a single pod differ from a list's")
		}
		if !reflect.DeepEqual(single.Rows[0].Cells, fromList.Rows[i].Cells) {
			t.Errorf("row %d: list cells %v, single cells %v", i, fromList.Rows[i].Cells, single.Rows[0].Cells)
		}
		if fromList.Rows[i].Object.Object != &list.Items[i] {
			t.Errorf("row %d object is not the list item", i)
		}
		if single.Rows[0].Object.Object != &list.Items[i] {
			t.Errorf("single object row does not carry the object")
		}
	}
}

func TestEmptyListStillHasColumns(t *testing.T) {
	table := render(t, &appsv1.DeploymentList{}, false)
	if got, want := columnNames(table), []string{"Name", "Ready", "Up-to-date", "Available", "Age"}; !reflect.DeepEqual(got, want) {
		t.Errorf("columns = %q, want %q", got, want)
	}
	// An empty slice, not nil, so that JSON clients see "rows": [].
	if table.Rows == nil || len(table.Rows) != 0 {
		t.Errorf("rows = %#v, want empty", table.Rows)
	}
}

func TestTableCarriesListMetadata(t *testing.T) {
	remaining := int64(5)
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next", RemainingItemCount: &remaining}}
	table := render(t, list, false)
	if table.APIVersion != "meta.k8s.io/v1" || table.Kind != "Table" {
		t.Errorf("type = %s %s, want meta.k8s.io/v1 Table", table.APIVersion, table.Kind)
	}
	if table.ResourceVersion != "42" || table.Continue != "next" || table.RemainingItemCount == nil || *table.RemainingItemCount != 5 {
		t.Errorf("list meta = %+v, want resourceVersion 42, continue next, 5 remaining", table.ListMeta)
	}

	cm := &corev1.ConfigMap{ObjectMeta: objMeta("cfg")}
	cm.ResourceVersion = "7"
	if rv := render(t, cm, false).ResourceVersion; rv != "7" {
		t.Errorf("resourceVersion of a single object's table = %q, want 7", rv)
	}
}

func TestKindsWithoutPrinterGetTheDefaultTable(t *testing.T) {
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("example.com/v1")
	cr.SetKind("Widget")
	cr.SetName("w1")
	cr.SetCreationTimestamp(metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
	tests := []struct {
		name string
		obj  runtime.Object
		want [][]any
	}{
		{"limit range", &corev1.LimitRange{ObjectMeta: objMeta("limits")}, [][]any{{"limits", "2026-03-01T11:00:00Z"}}},
		{"custom resource", cr, [][]any{{"w1", "2026-01-02T03:04:05Z"}}},
		{"custom resource list", &unstructured.UnstructuredList{Items: []unstructured.Unstructured{*cr, *cr}},
			[][]any{{"w1", "2026-01-02T03:04:05Z"}, {"w1", "2026-01-02T03:04:05Z"}}},
		{"mixed list", &metav1.List{Items: []runtime.RawExtension{{Object: cr}, {Object: &corev1.LimitRange{ObjectMeta: objMeta("limits")}}}},
			[][]any{{"w1", "2026-01-02T03:04:05Z"}, {"limits", "2026-03-01T11:00:00Z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := render(t, tt.obj, true)
			if got := columnNames(table); !reflect.DeepEqual(got, []string{"Name", "Created At"}) {
				t.Errorf("columns = %q, want Name, Created At", got)
			}
			var got [][]any
			for _, r := range table.Rows {
				got = append(got, r.Cells)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rows = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObjectsWithoutMetadataAreNotPrintable(t *testing.T) {
	for _, obj := range []runtime.Object{nil, &metav1.Status{Status: metav1.StatusFailure}} {
		if _, err := ToTable(obj, false, now); !errors.Is(err, ErrNotPrintable) {
			t.Errorf("ToTable(%T) error = %v, want ErrNotPrintable", obj, err)
		}
	}
}

func TestAges(t *testing.T) {
	tests := []struct {
		created metav1.Time
		want    string
	}{
		{ago(5 * time.Second), "5s"},
		{ago(90*time.Minute + 20*time.Second), "90m"},
		{ago(5*time.Hour + 30*time.Minute), "5h30m"},
		{ago(3*24*time.Hour + 2*time.Hour), "3d2h"},
		{ago(400 * 24 * time.Hour), "400d"},
		{metav1.Time{}, "<unknown>"},
		{metav1.NewTime(now.Add(time.Hour)), "<invalid>"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: tt.created}}
			if got := wideRow(t, cm)[2]; got != tt.want {
				t.Errorf("AGE = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTableEncodesAsKubectlExpects(t *testing.T) {
	table := render(t, &corev1.PodList{Items: []corev1.Pod{*testPod().phase(corev1.PodRunning).obj()}}, true)
	if err := SetIncludeObject(table, metav1.IncludeMetadata); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Kind              string `json:"kind"`
		APIVersion        string `json:"apiVersion"`
		ColumnDefinitions []struct {
			Name     string `json:"name"`
			Priority int32  `json:"priority"`
		} `json:"columnDefinitions"`
		Rows []struct {
			Cells  []any `json:"cells"`
			Object struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"object"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != "Table" || back.APIVersion != "meta.k8s.io/v1" || len(back.ColumnDefinitions) != 9 ||
		back.ColumnDefinitions[5].Priority != 1 || len(back.Rows) != 1 ||
		back.Rows[0].Object.Kind != "PartialObjectMetadata" || back.Rows[0].Object.Metadata.Name != "web" {
		t.Errorf("unexpected JSON: %s", data)
	}
}
