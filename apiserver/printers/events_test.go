package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventColumnsInterleavePriorities(t *testing.T) {
	checkColumns(t, &corev1.Event{},
		[]string{"Last Seen", "Type", "Reason", "Object", "Message"},
		[]string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"})
}

func TestEventCells(t *testing.T) {
	pod := corev1.ObjectReference{Kind: "Pod", Name: "web-1", FieldPath: "spec.containers{app}"}
	micro := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(now.Add(-d)) }
	tests := []struct {
		name  string
		event corev1.Event
		want  []any
	}{
		{"core event seen several times", corev1.Event{
			InvolvedObject: pod, Type: "Warning", Reason: "BackOff", Message: "Back-off restarting  \n",
			Source: corev1.EventSource{Component: "kubelet", Host: "n1"}, Count: 7,
			FirstTimestamp: ago(time.Hour), LastTimestamp: ago(2 * time.Minute)},
			[]any{"2m", "Warning", "BackOff", "pod/web-1", "spec.containers{app}", "kubelet, n1", "Back-off restarting", "60m", int64(7), "web.1"}},
		{"never seen again: last seen is first seen", corev1.Event{
			InvolvedObject: pod, Type: "Normal", Reason: "Pulled", Source: corev1.EventSource{Component: "kubelet"},
			FirstTimestamp: ago(5 * time.Minute)},
			[]any{"5m", "Normal", "Pulled", "pod/web-1", "spec.containers{app}", "kubelet", "", "5m", int64(1), "web.1"}},
		{"new-style event with a series", corev1.Event{
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"}, Type: "Normal", Reason: "NodeReady",
			ReportingController: "cairn-agent", ReportingInstance: "n1", EventTime: micro(30 * time.Minute),
			Series: &corev1.EventSeries{Count: 4, LastObservedTime: micro(10 * time.Second)}},
			[]any{"10s", "Normal", "NodeReady", "node/n1", "", "cairn-agent, n1", "", "30m", int64(4), "web.1"}},
		{"object without a name", corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Namespace"}},
			[]any{"<unknown>", "", "", "namespace", "", "", "", "<unknown>", int64(1), "web.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.event
			e.ObjectMeta = objMeta("web.1")
			checkCells(t, wideRow(t, &e), tt.want)
			plain := render(t, &e, false).Rows[0].Cells
			checkCells(t, plain, []any{tt.want[0], tt.want[1], tt.want[2], tt.want[3], tt.want[6]})
		})
	}
}

func TestEventsV1EventPrintsLikeCore(t *testing.T) {
	e := &eventsv1.Event{
		ObjectMeta:          objMeta("web.2"),
		EventTime:           metav1.NewMicroTime(now.Add(-3 * time.Minute)),
		ReportingController: "cairn-scheduler",
		ReportingInstance:   "s1",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
		Note:                "Assigned default/web-1 to n1",
		Type:                "Normal",
	}
	checkColumns(t, e,
		[]string{"Last Seen", "Type", "Reason", "Object", "Message"},
		[]string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"})
	checkCells(t, wideRow(t, e), []any{"3m", "Normal", "Scheduled", "pod/web-1", "", "cairn-scheduler, s1",
		"Assigned default/web-1 to n1", "3m", int64(1), "web.2"})

	e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}
	c := wideRow(t, e)
	checkCells(t, []any{c[0], c[8]}, []any{"60s", int64(2)})
}
