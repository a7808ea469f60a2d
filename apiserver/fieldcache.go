package apiserver

import (
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/lru"
)

// createFieldsCacheSize bounds the distinct objects a resource remembers
// the managedFields of; a few kilobytes each.
const createFieldsCacheSize = 256

// createFieldsCache remembers the managedFields a create got, by the
// object's content, so that a run of alike creates (the pods of one
// ReplicaSet, which differ only in name) computes them once. Computing
// them walks the whole object twice through the merge library's
// reflection, which costs more CPU than the rest of the create.
//
// A create's managedFields depend only on what the cache key holds: the
// fields of the object other than those the field manager strips (name,
// namespace, uid, creationTimestamp, generation, resourceVersion), the
// manager and the subresource. A hit replays the entry the field manager
// made, with the time of this create.
type createFieldsCache struct {
	entries *lru.Cache // key -> []metav1.ManagedFieldsEntry, without times
}

// newCreateFieldsCache returns an empty cache; it is safe for concurrent
// use.
func newCreateFieldsCache() *createFieldsCache {
	return &createFieldsCache{entries: lru.New(createFieldsCacheSize)}
}

// protoMarshaler is what every built-in type implements.
type protoMarshaler interface {
	Marshal() ([]byte, error)
}

// createKey returns the cache key of creating obj; ok is false when obj
// cannot be keyed (it carries managedFields of its own, or is not a
// protobuf type).
func createKey(obj runtime.Object, sub, manager string) (key string, ok bool) {
	pm, isProto := obj.(protoMarshaler)
	m, isMeta := obj.(metav1.Object)
	if !isProto || !isMeta || m.GetManagedFields() != nil {
		return "", false
	}
	// Clear what the field manager strips, for the time of the marshal.
	name, ns, uid, created := m.GetName(), m.GetNamespace(), m.GetUID(), m.GetCreationTimestamp()
	gen, rv, self := m.GetGeneration(), m.GetResourceVersion(), m.GetSelfLink()
	m.SetName("")
	m.SetNamespace("")
	m.SetUID("")
	m.SetCreationTimestamp(metav1.Time{})
	m.SetGeneration(0)
	m.SetResourceVersion("")
	m.SetSelfLink("")
	b, err := pm.Marshal()
	m.SetName(name)
	m.SetNamespace(ns)
	m.SetUID(uid)
	m.SetCreationTimestamp(created)
	m.SetGeneration(gen)
	m.SetResourceVersion(rv)
	m.SetSelfLink(self)
	if err != nil {
		return "", false
	}
	return sub + "\x00" + manager + "\x00" + string(b), true
}

// get returns the managedFields of a create keyed key, stamped with now.
func (c *createFieldsCache) get(key string, now time.Time) ([]metav1.ManagedFieldsEntry, bool) {
	v, ok := c.entries.Get(key)
	if !ok {
		return nil, false
	}
	cached := v.([]metav1.ManagedFieldsEntry)
	if len(cached) == 0 {
		return nil, true
	}
	out := make([]metav1.ManagedFieldsEntry, len(cached))
	for i, e := range cached {
		e.Time = &metav1.Time{Time: now.UTC()}
		if e.FieldsV1 != nil {
			e.FieldsV1 = e.FieldsV1.DeepCopy()
		}
		out[i] = e
	}
	return out, true
}

// add remembers the managedFields the field manager gave a create keyed
// key.
func (c *createFieldsCache) add(key string, entries []metav1.ManagedFieldsEntry) {
	kept := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		e.Time = nil
		if e.FieldsV1 != nil {
			e.FieldsV1 = e.FieldsV1.DeepCopy()
		}
		kept[i] = e
	}
	c.entries.Add(key, kept)
}

// trackCreate is trackUpdate for a create (from an empty live object),
// through the resource's cache when it has one.
func (h *restHandler) trackCreate(r *http.Request, sub string, obj runtime.Object) runtime.Object {
	if h.createFields == nil {
		return h.trackUpdate(r, sub, h.res.New(), obj)
	}
	manager := managerName(r)
	key, ok := createKey(obj, sub, manager)
	if !ok {
		return h.trackUpdate(r, sub, h.res.New(), obj)
	}
	m, err := metaOf(obj)
	if err != nil {
		return obj
	}
	if entries, hit := h.createFields.get(key, time.Now()); hit {
		m.SetManagedFields(entries)
		return obj
	}
	out := h.trackUpdate(r, sub, h.res.New(), obj)
	if om, err := metaOf(out); err == nil {
		h.createFields.add(key, om.GetManagedFields())
	}
	return out
}
