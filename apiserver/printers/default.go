package printers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// defaultColumns are Kubernetes' table for kinds without a printer of
// their own (Roles, ClusterRoles, custom resources without columns).
func defaultColumns() []metav1.TableColumnDefinition {
	return cols(nameColumn(), column("Created At", typeDate, objectMetaDoc("creationTimestamp")))
}

// defaultPrinter shows any object with metadata as NAME and CREATED AT,
// the creation time in RFC 3339 and UTC rather than an age.
func defaultPrinter() printer {
	return printer{
		columns: defaultColumns(),
		row: func(obj runtime.Object, _ options) (metav1.TableRow, error) {
			m, err := meta.Accessor(obj)
			if err != nil {
				return metav1.TableRow{}, fmt.Errorf("%w: %T has no object metadata", ErrNotPrintable, obj)
			}
			return cells(m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)), nil
		},
	}
}
