// Package registry is the catalogue of API resources the API server serves:
// for each one its names, scope, subresources, Go types and the strategy
// that defaults, prepares and validates objects, as Kubernetes' own
// registries do.
package registry

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Resource describes one served resource, e.g. apps/v1 deployments.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string // e.g. "Deployment"
	ListKind   string // e.g. "DeploymentList"
	Namespaced bool
	ShortNames []string // e.g. "deploy"
	Categories []string // e.g. "all"
	// Subresources served besides the main resource, e.g. "status", "scale".
	Subresources []string
	New          func() runtime.Object
	NewList      func() runtime.Object
	Strategy     Strategy
	// SelectableFields returns the field set a fieldSelector is matched
	// against: metadata.name, metadata.namespace for namespaced
	// resources, and the type's own fields (e.g. spec.nodeName for pods).
	SelectableFields func(obj runtime.Object) fields.Set
	// Scale serves the "scale" subresource; nil when there is none.
	Scale Scaler
	// ObjectSubresources are the subresources other than status that
	// are read and written as the whole object but change one part of
	// it, e.g. pods' "ephemeralcontainers", by name. Each is also in
	// Subresources.
	ObjectSubresources map[string]ObjectSubresource
	// CreateOnly resources (the self reviews) are answered on create and
	// never stored: discovery and OpenAPI show only their create, and
	// they have neither NewList nor Strategy, nor a handler of the
	// generic REST layer.
	CreateOnly bool
}

// Scaler converts between an object and its autoscaling/v1 Scale.
type Scaler interface {
	// Scale returns obj's scale: replicas wanted and seen, and the pod
	// selector as a string.
	Scale(obj runtime.Object) (*autoscalingv1.Scale, error)
	// SetReplicas sets obj's desired replicas; the object is then
	// validated and stored as an update of the main resource.
	SetReplicas(obj runtime.Object, replicas int32) error
	// ValidateScale checks a scale request body.
	ValidateScale(s *autoscalingv1.Scale) field.ErrorList
}

// ObjectSubresource is a subresource whose body and answer are the whole
// object, like status, but through which a client changes only one part
// of it, e.g. spec.ephemeralContainers of a pod: the rest is kept as
// stored, as the status subresource keeps everything but status.
type ObjectSubresource struct {
	// Fields is the path of the part it changes, e.g. ["spec",
	// "ephemeralContainers"]: its field managers own fields there only.
	Fields []string
	// Strategy keeps the rest of the object and validates the update;
	// the resource's own Strategy still defaults the object and says
	// whether the spec changed.
	Strategy SubresourceStrategy
}

// SubresourceStrategy holds the update rules of an ObjectSubresource.
type SubresourceStrategy interface {
	// PrepareForUpdate keeps from old everything the subresource may
	// not change.
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	// ValidateUpdate checks the updated object against the stored one.
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// ObjectSubresource returns the rules of sub when it is one of the
// resource's ObjectSubresources.
func (r *Resource) ObjectSubresource(sub string) (ObjectSubresource, bool) {
	o, ok := r.ObjectSubresources[sub]
	return o, ok
}

// GVK returns the resource's group, version and kind.
func (r *Resource) GVK() schema.GroupVersionKind { return r.GVR.GroupVersion().WithKind(r.Kind) }

// HasSubresource reports whether sub (e.g. "status") is served.
func (r *Resource) HasSubresource(sub string) bool {
	for _, s := range r.Subresources {
		if s == sub {
			return true
		}
	}
	return false
}

// Strategy holds a resource's rules. The generic REST layer handles what
// all objects share (name, uid, creationTimestamp, resourceVersion,
// generation, deletion); the strategy handles what is specific to the type.
// Validation failures become 422 responses with the field causes.
type Strategy interface {
	// Default fills unset fields as Kubernetes' defaulting does.
	Default(obj runtime.Object)
	// PrepareForCreate clears what a client may not set on create (status,
	// for resources with a status subresource).
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	// PrepareForUpdate keeps what an update of the main resource may not
	// change (status, for resources with a status subresource).
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	// PrepareStatusForUpdate keeps everything but status from old.
	PrepareStatusForUpdate(ctx context.Context, obj, old runtime.Object)
	// Validate checks a new object, after Default and PrepareForCreate.
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an updated object in full (not only what
	// changed) against the stored one; it serves both the main resource
	// and the status subresource. metadata.resourceVersion must be set.
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// SpecChanged reports whether an update changes the spec, which bumps
	// metadata.generation.
	SpecChanged(obj, old runtime.Object) bool
}
