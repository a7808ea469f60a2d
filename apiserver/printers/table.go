package printers

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ToTable renders obj, a single object or a list type from k8s.io/api, as
// the Table `kubectl get` prints.
//
// wide keeps the priority-1 columns (`kubectl get -o wide`). The
// kube-apiserver always sends them and lets kubectl hide them, so an HTTP
// handler answering kubectl should pass true. now is the instant ages are
// measured from; passing it in keeps output reproducible in tests.
//
// Every row's Object holds the object itself; SetIncludeObject trims it to
// what the client asked for. For lists, the table carries the list's
// resourceVersion, continue token and remaining item count.
func ToTable(obj runtime.Object, wide bool, now time.Time) (*metav1.Table, error) {
	if obj == nil {
		return nil, fmt.Errorf("%w: nil object", ErrNotPrintable)
	}
	items, prototype, err := splitList(obj)
	if err != nil {
		return nil, err
	}
	p := printerFor(prototype)
	keep := keptColumns(p.columns, wide)
	opts := options{wide: wide, now: now}

	table := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "Table"},
		ColumnDefinitions: make([]metav1.TableColumnDefinition, 0, len(keep)),
		Rows:              make([]metav1.TableRow, 0, len(items)),
	}
	for _, i := range keep {
		table.ColumnDefinitions = append(table.ColumnDefinitions, p.columns[i])
	}
	for _, item := range items {
		row, err := p.row(item, opts)
		if err != nil {
			return nil, err
		}
		if len(row.Cells) != len(p.columns) {
			// A printer bug; refuse rather than send misaligned columns.
			return nil, fmt.Errorf("printers: %T row has %d cells for %d columns", item, len(row.Cells), len(p.columns))
		}
		cells := make([]any, 0, len(keep))
		for _, i := range keep {
			cells = append(cells, row.Cells[i])
		}
		row.Cells = cells
		row.Object = runtime.RawExtension{Object: item}
		table.Rows = append(table.Rows, row)
	}
	copyListMeta(table, obj)
	return table, nil
}

// keptColumns returns the indexes of the columns shown: all of them when
// wide, else those of priority 0. Priority-1 columns are not always last
// (events put SUBOBJECT and SOURCE before MESSAGE), hence indexes.
func keptColumns(columns []metav1.TableColumnDefinition, wide bool) []int {
	keep := make([]int, 0, len(columns))
	for i, c := range columns {
		if wide || c.Priority == 0 {
			keep = append(keep, i)
		}
	}
	return keep
}

// splitList returns the objects that become rows, and an object of the row
// type, which picks the printer even when a list is empty.
func splitList(obj runtime.Object) (items []runtime.Object, prototype runtime.Object, err error) {
	if !meta.IsListType(obj) {
		return []runtime.Object{obj}, obj, nil
	}
	items, err = meta.ExtractList(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %T: %v", ErrNotPrintable, obj, err)
	}
	return items, listItemPrototype(obj), nil
}

// listItemPrototype returns a zero value of the list's item type, or nil
// when the items are not objects of one type (metav1.List holds
// RawExtensions); such lists get the default table.
func listItemPrototype(list runtime.Object) runtime.Object {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	field := v.Elem().FieldByName("Items")
	if !field.IsValid() || field.Kind() != reflect.Slice {
		return nil
	}
	elem := field.Type().Elem()
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	if elem.Kind() != reflect.Struct {
		return nil
	}
	obj, _ := reflect.New(elem).Interface().(runtime.Object)
	return obj
}

// copyListMeta gives the table the paging metadata of the list it shows,
// so that `kubectl get --chunk-size` can continue and watch can resume.
func copyListMeta(table *metav1.Table, obj runtime.Object) {
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
		return
	}
	if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
}
