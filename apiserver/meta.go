package apiserver

import (
	"fmt"
	"math/rand/v2"
	"time"

	"cairn/apiserver/registry"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// generateNameSuffix is the alphabet Kubernetes uses for generateName:
// no vowels (no accidental words) and no easily confused characters.
const generateNameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// generatedName appends five random characters to a generateName prefix,
// trimming the prefix so the result stays a valid 63-character name.
func generatedName(prefix string) string {
	const maxPrefix = 63 - 5
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	b := make([]byte, 5)
	for i := range b {
		b[i] = generateNameAlphabet[rand.IntN(len(generateNameAlphabet))]
	}
	return prefix + string(b)
}

// beforeCreate sets the metadata the server owns on a new object: name
// from generateName, namespace from the URL, uid, creationTimestamp and
// generation; it clears what a client may not set.
func beforeCreate(obj runtime.Object, namespace string, res *registry.Resource, now time.Time) error {
	m, err := metaOf(obj)
	if err != nil {
		return err
	}
	if err := checkNamespace(m, namespace, res); err != nil {
		return err
	}
	if m.GetResourceVersion() != "" {
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generatedName(m.GetGenerateName()))
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.NewTime(now.Truncate(time.Second)))
	m.SetGeneration(1)
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetManagedFields(nil)
	return nil
}

// checkNamespace reconciles the object's namespace with the request's.
func checkNamespace(m metav1.Object, namespace string, res *registry.Resource) error {
	if !res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	switch m.GetNamespace() {
	case "":
		m.SetNamespace(namespace)
	case namespace:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// beforeUpdate carries the server-owned metadata of old over to obj and
// bumps generation when the spec changed.
func beforeUpdate(obj, old runtime.Object, namespace string, res *registry.Resource, specChanged bool) error {
	m, err := metaOf(obj)
	if err != nil {
		return err
	}
	o, err := metaOf(old)
	if err != nil {
		return err
	}
	if err := checkNamespace(m, namespace, res); err != nil {
		return err
	}
	if uid := m.GetUID(); uid != "" && uid != o.GetUID() {
		return apierrors.NewConflict(res.GVR.GroupResource(), o.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, o.GetUID()))
	}
	m.SetUID(o.GetUID())
	m.SetCreationTimestamp(o.GetCreationTimestamp())
	m.SetDeletionTimestamp(o.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(o.GetDeletionGracePeriodSeconds())
	m.SetManagedFields(o.GetManagedFields())
	gen := o.GetGeneration()
	if specChanged {
		gen++
	}
	m.SetGeneration(gen)
	if o.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) > len(o.GetFinalizers()) {
		return apierrors.NewForbidden(res.GVR.GroupResource(), o.GetName(),
			fmt.Errorf("no new finalizers can be added if the object is being deleted, found new finalizers %q", newFinalizers(m.GetFinalizers(), o.GetFinalizers())))
	}
	return nil
}

func newFinalizers(now, before []string) []string {
	had := map[string]bool{}
	for _, f := range before {
		had[f] = true
	}
	var out []string
	for _, f := range now {
		if !had[f] {
			out = append(out, f)
		}
	}
	return out
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("%T has no object metadata", obj))
	}
	return m, nil
}

// invalid builds Kubernetes' 422 for validation errors.
func invalid(res *registry.Resource, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(res.GVK().GroupKind(), name, errs)
}
