package printers

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printer is one kind's columns and the function filling a row for it.
// Row functions always return every cell, wide ones included; ToTable
// drops what is not shown, so a printer cannot misalign its columns.
type printer struct {
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object, o options) (metav1.TableRow, error)
}

// typed adapts a row function over one concrete type to a printer.
func typed[T runtime.Object](columns []metav1.TableColumnDefinition, row func(T, options) metav1.TableRow) printer {
	return printer{
		columns: columns,
		row: func(obj runtime.Object, o options) (metav1.TableRow, error) {
			t, ok := obj.(T)
			if !ok {
				var want T
				return metav1.TableRow{}, fmt.Errorf("%w: %T among items of type %T", ErrNotPrintable, obj, want)
			}
			return row(t, o), nil
		},
	}
}

// options carries what every row function may need.
type options struct {
	// wide is set for `-o wide`; a few cells (load balancer addresses) are
	// shortened when it is not, as kubectl does.
	wide bool
	now  time.Time
}

// since formats the time elapsed since t like kubectl's AGE column.
func (o options) since(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(o.now.Sub(t.Time))
}

// sinceMicro is since for the microsecond timestamps of events.
func (o options) sinceMicro(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(o.now.Sub(t.Time))
}

// age is the AGE cell of an object.
func (o options) age(m metav1.Object) string {
	return o.since(m.GetCreationTimestamp())
}

// cells builds a row from its cells.
func cells(values ...any) metav1.TableRow {
	return metav1.TableRow{Cells: values}
}
