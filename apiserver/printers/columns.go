package printers

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Column types as OpenAPI names them; kubectl aligns and sorts by them.
const (
	typeString  = "string"
	typeInteger = "integer"
	typeBoolean = "boolean"
	typeDate    = "date"
)

// objectMetaDoc is where the NAME and AGE descriptions come from, as in
// Kubernetes: the API's own field documentation.
func objectMetaDoc(field string) string { return metav1.ObjectMeta{}.SwaggerDoc()[field] }

// column is a column shown by plain `kubectl get`.
func column(name, typ, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description}
}

// wideColumn is a column shown only by `kubectl get -o wide`.
func wideColumn(name, typ, description string) metav1.TableColumnDefinition {
	c := column(name, typ, description)
	c.Priority = 1
	return c
}

// nameColumn is the NAME column; format "name" tells kubectl it identifies
// the row (`kubectl get -o name`, `--show-kind`).
func nameColumn() metav1.TableColumnDefinition {
	c := column("Name", typeString, objectMetaDoc("name"))
	c.Format = "name"
	return c
}

// ageColumn is the AGE column.
func ageColumn() metav1.TableColumnDefinition {
	return column("Age", typeString, objectMetaDoc("creationTimestamp"))
}

// templateColumns are the wide CONTAINERS and IMAGES columns of the
// workload kinds, then SELECTOR when selectorDoc is not empty.
func templateColumns(selectorDoc string) []metav1.TableColumnDefinition {
	cols := []metav1.TableColumnDefinition{
		wideColumn("Containers", typeString, "Names of the containers in the pod template."),
		wideColumn("Images", typeString, "Images of the containers in the pod template."),
	}
	if selectorDoc != "" {
		cols = append(cols, wideColumn("Selector", typeString, selectorDoc))
	}
	return cols
}

// columns joins column groups into one definition list.
func columns(groups ...[]metav1.TableColumnDefinition) []metav1.TableColumnDefinition {
	var all []metav1.TableColumnDefinition
	for _, g := range groups {
		all = append(all, g...)
	}
	return all
}

// cols is a column group literal, to keep definitions short.
func cols(c ...metav1.TableColumnDefinition) []metav1.TableColumnDefinition { return c }
