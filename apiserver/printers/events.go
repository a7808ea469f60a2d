package printers

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func eventColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	name := nameColumn()
	name.Priority = 1
	return cols(
		column("Last Seen", typeString, doc["lastTimestamp"]),
		column("Type", typeString, doc["type"]),
		column("Reason", typeString, doc["reason"]),
		column("Object", typeString, doc["involvedObject"]),
		wideColumn("Subobject", typeString, corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
		wideColumn("Source", typeString, doc["source"]),
		column("Message", typeString, doc["message"]),
		wideColumn("First Seen", typeString, doc["firstTimestamp"]),
		// A string column holding a number, as in Kubernetes.
		wideColumn("Count", typeString, doc["count"]),
		name,
	)
}

func eventRow(e *corev1.Event, o options) metav1.TableRow {
	// Events written through events.k8s.io carry eventTime and series
	// instead of the first/last timestamps and count of core events.
	first := o.since(e.FirstTimestamp)
	if e.FirstTimestamp.IsZero() {
		first = o.sinceMicro(e.EventTime)
	}
	last := o.since(e.LastTimestamp)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last = o.sinceMicro(e.Series.LastObservedTime)
		count = e.Series.Count
	case count == 0:
		count = 1 // a singleton event of the new API
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object += "/" + e.InvolvedObject.Name
	}
	return cells(
		last,
		e.Type,
		e.Reason,
		object,
		e.InvolvedObject.FieldPath,
		eventSource(e),
		strings.TrimSpace(e.Message),
		first,
		int64(count),
		e.Name,
	)
}

// eventSource is "component, host", falling back on the reporting
// controller and instance that new-style events set instead.
func eventSource(e *corev1.Event) string {
	component, host := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if host == "" {
		host = e.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}

// eventsV1Row shows an events.k8s.io event like the core event it is
// stored as, so both APIs print alike.
func eventsV1Row(e *eventsv1.Event, o options) metav1.TableRow {
	core := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		core.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return eventRow(core, o)
}
