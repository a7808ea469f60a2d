// Package strategy turns typed per-resource functions into the registry's
// Strategy, so each resource writes only the rules it has and never a type
// switch or a no-op method.
package strategy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Funcs implements the registry's Strategy for objects of type T. A nil
// function does nothing: no defaults, nothing to prepare, no errors, and no
// spec change (so generation is never bumped).
type Funcs[T runtime.Object] struct {
	DefaultFunc                func(obj T)
	PrepareForCreateFunc       func(ctx context.Context, obj T)
	PrepareForUpdateFunc       func(ctx context.Context, obj, old T)
	PrepareStatusForUpdateFunc func(ctx context.Context, obj, old T)
	ValidateFunc               func(ctx context.Context, obj T) field.ErrorList
	ValidateUpdateFunc         func(ctx context.Context, obj, old T) field.ErrorList
	SpecChangedFunc            func(obj, old T) bool
}

// cast panics on a wrong type: the HTTP layer handing a Service to the pod
// strategy is a programming error that must not pass silently.
func cast[T runtime.Object](obj runtime.Object) T {
	t, ok := obj.(T)
	if !ok {
		var want T
		panic(fmt.Sprintf("registry: strategy for %T got %T", want, obj))
	}
	return t
}

// Default fills unset fields.
func (f Funcs[T]) Default(obj runtime.Object) {
	if f.DefaultFunc != nil {
		f.DefaultFunc(cast[T](obj))
	}
}

// PrepareForCreate clears what a client may not set on create.
func (f Funcs[T]) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	if f.PrepareForCreateFunc != nil {
		f.PrepareForCreateFunc(ctx, cast[T](obj))
	}
}

// PrepareForUpdate keeps what an update of the main resource may not change.
func (f Funcs[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	if f.PrepareForUpdateFunc != nil {
		f.PrepareForUpdateFunc(ctx, cast[T](obj), cast[T](old))
	}
}

// PrepareStatusForUpdate keeps everything but status from old.
func (f Funcs[T]) PrepareStatusForUpdate(ctx context.Context, obj, old runtime.Object) {
	if f.PrepareStatusForUpdateFunc != nil {
		f.PrepareStatusForUpdateFunc(ctx, cast[T](obj), cast[T](old))
	}
}

// Validate checks a new object.
func (f Funcs[T]) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	if f.ValidateFunc == nil {
		return nil
	}
	return f.ValidateFunc(ctx, cast[T](obj))
}

// ValidateUpdate checks an updated object against the stored one.
func (f Funcs[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if f.ValidateUpdateFunc == nil {
		return nil
	}
	return f.ValidateUpdateFunc(ctx, cast[T](obj), cast[T](old))
}

// SpecChanged reports whether an update changes the spec.
func (f Funcs[T]) SpecChanged(obj, old runtime.Object) bool {
	if f.SpecChangedFunc == nil {
		return false
	}
	return f.SpecChangedFunc(cast[T](obj), cast[T](old))
}
