package printers

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// now is the fixed clock every test measures ages against.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ago is a timestamp d before now.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// agoPtr is ago for optional timestamps.
func agoPtr(d time.Duration) *metav1.Time { t := ago(d); return &t }

// objMeta is object metadata created an hour ago.
func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(time.Hour)}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

// render returns obj's table, failing the test on error.
func render(t *testing.T, obj runtime.Object, wide bool) *metav1.Table {
	t.Helper()
	table, err := ToTable(obj, wide, now)
	if err != nil {
		t.Fatalf("ToTable(%T): %v", obj, err)
	}
	return table
}

// wideRow returns the cells of obj's single row with every column.
func wideRow(t *testing.T, obj runtime.Object) []any {
	t.Helper()
	table := render(t, obj, true)
	if len(table.Rows) != 1 {
		t.Fatalf("ToTable(%T) has %d rows, want 1", obj, len(table.Rows))
	}
	return table.Rows[0].Cells
}

// columnNames lists a table's column names.
func columnNames(table *metav1.Table) []string {
	names := make([]string, len(table.ColumnDefinitions))
	for i, c := range table.ColumnDefinitions {
		names[i] = c.Name
	}
	return names
}

// checkColumns verifies the column names of obj's table, plain and wide.
func checkColumns(t *testing.T, obj runtime.Object, plain, wide []string) {
	t.Helper()
	if got := columnNames(render(t, obj, false)); !reflect.DeepEqual(got, plain) {
		t.Errorf("columns = %q, want %q", got, plain)
	}
	if got := columnNames(render(t, obj, true)); !reflect.DeepEqual(got, wide) {
		t.Errorf("wide columns = %q, want %q", got, wide)
	}
}

// checkCells compares a row's cells with want.
func checkCells(t *testing.T, got, want []any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cells =\n  %#v\nwant\n  %#v", got, want)
	}
}
