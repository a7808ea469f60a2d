package scheduler

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// recorder is a profile's event recorder. The broadcaster behind it is
// made by Run (it starts a goroutine, and New starts none), so the
// plugins built by New get this stand-in, which drops events until Run
// sets the real recorder.
type recorder struct {
	r atomic.Pointer[record.EventRecorder]
}

var _ record.EventRecorder = (*recorder)(nil)

func (r *recorder) set(rec record.EventRecorder) { r.r.Store(&rec) }

func (r *recorder) get() record.EventRecorder {
	if p := r.r.Load(); p != nil {
		return *p
	}
	return nil
}

// Event implements record.EventRecorder.
func (r *recorder) Event(obj runtime.Object, eventtype, reason, message string) {
	if rec := r.get(); rec != nil {
		rec.Event(obj, eventtype, reason, message)
	}
}

// Eventf implements record.EventRecorder.
func (r *recorder) Eventf(obj runtime.Object, eventtype, reason, format string, args ...any) {
	if rec := r.get(); rec != nil {
		rec.Eventf(obj, eventtype, reason, format, args...)
	}
}

// AnnotatedEventf implements record.EventRecorder.
func (r *recorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	if rec := r.get(); rec != nil {
		rec.AnnotatedEventf(obj, annotations, eventtype, reason, format, args...)
	}
}
