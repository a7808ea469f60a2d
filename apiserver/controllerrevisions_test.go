package apiserver

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestControllerRevisionsAreServed is what the StatefulSet and DaemonSet
// controllers and `kubectl rollout history` do with controller revisions:
// create, relabel, list as a table; their data cannot change.
func TestControllerRevisionsAreServed(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := ctxT(t)
	cs := c.client(0)
	waitNamespace(t, cs, "default")
	revs := cs.AppsV1().ControllerRevisions("default")
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "u-1", Controller: ptr.To(true)}}},
		Data:     runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace"}}}`)},
		Revision: 3,
	}
	created, err := revs.Create(ctx, cr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(created.Data.Raw) != string(cr.Data.Raw) || created.Revision != 3 {
		t.Fatalf("created %+v", created)
	}
	created.Labels["controller-revision-hash"] = "5d8f"
	created.Revision = 4
	updated, err := revs.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("relabel and renumber: %v", err)
	}
	updated.Data.Raw = []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"db"}}}}}`)
	if _, err := revs.Update(ctx, updated, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing data: %v, want 422 Invalid", err)
	}
	if _, err := revs.Create(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "nodata"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("creating without data: %v, want 422 Invalid", err)
	}

	body, err := cs.AppsV1().RESTClient().Get().AbsPath("/apis/apps/v1/namespaces/default/controllerrevisions").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, col := range table.ColumnDefinitions {
		cols = append(cols, col.Name)
	}
	if len(cols) != 4 || cols[1] != "Controller" || cols[2] != "Revision" || cols[3] != "Age" || len(table.Rows) != 1 {
		t.Fatalf("columns %v, rows %d", cols, len(table.Rows))
	}
	if row := table.Rows[0].Cells; row[1] != "statefulset.apps/web" || row[2] != float64(4) {
		t.Fatalf("row %v", row)
	}
}
