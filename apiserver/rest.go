package apiserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"cairn/apiserver/registry"
	"cairn/apiserver/storage"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// maxBodyBytes bounds request bodies (Kubernetes allows 3 MiB objects).
const maxBodyBytes = 3 << 20

// restHandler serves the verbs of one resource type over its store.
type restHandler struct {
	s     *Server
	res   *registry.Resource
	store *storage.Store
	// createFields caches the managedFields of creates; nil computes
	// them every time.
	createFields *createFieldsCache
}

func (h *restHandler) key(namespace, name string) string {
	if h.res.Namespaced {
		return h.store.Key(namespace, name)
	}
	return h.store.Key("", name)
}

// getCached reads an object from this replica's watch cache, and from the
// store when the cache lacks it: the cache may not have seen an object
// created a moment ago through another API server.
func (h *restHandler) getCached(ctx context.Context, namespace, name string) (runtime.Object, error) {
	obj, err := h.store.Get(ctx, h.key(namespace, name), storage.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		obj, err = h.store.Get(ctx, h.key(namespace, name), storage.GetOptions{})
	}
	return obj, err
}

func (h *restHandler) prefix(namespace string) string {
	if h.res.Namespaced {
		return h.store.Prefix(namespace)
	}
	return h.store.Prefix("")
}

func (h *restHandler) serve(w http.ResponseWriter, r *http.Request, info requestInfo) {
	var err error
	_, objectSub := h.res.ObjectSubresource(info.Subresource)
	switch {
	case info.Subresource == "":
		err = h.serveVerb(w, r, info)
	case !h.res.HasSubresource(info.Subresource):
		err = apierrors.NewNotFound(h.res.GVR.GroupResource(), info.Name+"/"+info.Subresource)
	case info.Subresource == "status" || objectSub:
		// Served as the object itself, through the generic verbs.
		if info.Verb != "get" && info.Verb != "update" && info.Verb != "patch" {
			err = apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" "+info.Subresource)
			break
		}
		err = h.serveVerb(w, r, info)
	default:
		sub, ok := subresourceHandlerFor(info.Subresource)
		if !ok {
			err = apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" "+info.Subresource)
			break
		}
		err = sub(h, w, r, info)
	}
	if err != nil {
		writeError(w, err)
	}
}

func (h *restHandler) serveVerb(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	switch info.Verb {
	case "get":
		return h.get(w, r, info)
	case "list":
		return h.list(w, r, info)
	case "watch":
		return h.watch(w, r, info)
	case "create":
		return h.create(w, r, info)
	case "update":
		return h.update(w, r, info)
	case "patch":
		return h.patch(w, r, info)
	case "delete":
		return h.delete(w, r, info)
	case "deletecollection":
		return h.deleteCollection(w, r, info)
	}
	return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb)
}

func (h *restHandler) get(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	obj, err := h.store.Get(r.Context(), h.key(info.Namespace, info.Name), storage.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")})
	if err != nil {
		return err
	}
	return h.respond(w, r, http.StatusOK, obj)
}

// selection builds the label and field predicate of a list or watch.
func (h *restHandler) selection(r *http.Request, info requestInfo) (func(runtime.Object) bool, error) {
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	supported := h.selectableFields(h.res.New())
	for _, req := range fs.Requirements() {
		if _, ok := supported[req.Field]; !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return func(obj runtime.Object) bool {
		m, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		if !ls.Matches(labels.Set(m.GetLabels())) {
			return false
		}
		return fs.Empty() || fs.Matches(h.selectableFields(obj))
	}, nil
}

// selectableFields are the fields a field selector may use: name and
// namespace everywhere, plus what the resource adds (pods by node, ...).
func (h *restHandler) selectableFields(obj runtime.Object) fields.Set {
	if h.res.SelectableFields != nil {
		return h.res.SelectableFields(obj)
	}
	m, err := metaOf(obj)
	if err != nil {
		return fields.Set{}
	}
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

func (h *restHandler) list(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	q := r.URL.Query()
	pred, err := h.selection(r, info)
	if err != nil {
		return err
	}
	opts := storage.ListOptions{
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")),
		Continue:             q.Get("continue"),
		Predicate:            pred,
	}
	if l := q.Get("limit"); l != "" {
		if opts.Limit, err = strconv.ParseInt(l, 10, 64); err != nil || opts.Limit < 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", l))
		}
	}
	list, err := h.store.List(r.Context(), h.prefix(info.Namespace), opts)
	if err != nil {
		return err
	}
	return h.respond(w, r, http.StatusOK, list)
}

func (h *restHandler) readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(body) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return body, nil
}

// strictFields reports whether the request asks for fieldValidation=Strict.
func strictFields(r *http.Request) bool { return r.URL.Query().Get("fieldValidation") == "Strict" }

func dryRun(r *http.Request) bool {
	for _, v := range r.URL.Query()["dryRun"] {
		if v == "All" {
			return true
		}
	}
	return false
}

func (h *restHandler) create(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if info.Name != "" || info.Subresource != "" {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), "create")
	}
	if err := checkFieldManager(r, "CreateOptions"); err != nil {
		return err
	}
	body, err := h.readBody(r)
	if err != nil {
		return err
	}
	obj := h.res.New()
	if err := decodeBody(r, body, obj, strictFields(r)); err != nil {
		return err
	}
	out, err := h.createObject(r.Context(), r, info.Namespace, obj, true)
	if err != nil {
		return err
	}
	return h.respond(w, r, http.StatusCreated, out)
}

// createObject stores a new object, after defaults, validation and
// admission; track records its fields under the request's manager (an
// apply has recorded them already).
func (h *restHandler) createObject(ctx context.Context, r *http.Request, namespace string, obj runtime.Object, track bool) (runtime.Object, error) {
	obj, err := h.admitNew(ctx, r, namespace, "", obj, track)
	if err != nil {
		return nil, err
	}
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	undo, err := h.admit(ctx, obj, dryRun(r))
	if err != nil {
		return nil, err
	}
	if dryRun(r) {
		return obj, nil
	}
	out, err := h.store.Create(ctx, h.key(m.GetNamespace(), m.GetName()), obj, h.ttl(obj))
	if err != nil {
		undo(err)
		return nil, err
	}
	return out, nil
}

// admitNew runs an object about to be created, by a create or by an
// update or apply that creates, through defaults, admission and
// validation; track records its fields under the request's manager for
// subresource. A client may create an object with its managedFields (a
// restore does): they are kept, and the creator's fields added to them.
func (h *restHandler) admitNew(ctx context.Context, r *http.Request, namespace, subresource string, obj runtime.Object, track bool) (runtime.Object, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	requested := m.GetManagedFields()
	if err := beforeCreate(obj, namespace, h.res, time.Now()); err != nil {
		return nil, err
	}
	h.res.Strategy.Default(obj)
	h.s.addDefaultTolerations(obj)
	h.s.admitServiceAccount(ctx, obj)
	if err := h.s.admitTokenSecret(ctx, obj, true); err != nil {
		return nil, err
	}
	m.SetManagedFields(requested)
	if track {
		obj = h.trackCreate(r, subresource, obj)
		m, _ = metaOf(obj)
	}
	h.res.Strategy.PrepareForCreate(ctx, obj)
	if errs := h.res.Strategy.Validate(ctx, obj); len(errs) > 0 {
		return nil, invalid(h.res, m.GetName(), errs)
	}
	if err := h.namespaceAdmits(ctx, m); err != nil {
		return nil, err
	}
	if err := h.admitPriority(ctx, obj); err != nil {
		return nil, err
	}
	if err := h.admitRBAC(ctx, obj, nil); err != nil {
		return nil, err
	}
	return obj, nil
}

// ttl is how long an object lives: events expire as in Kubernetes.
func (h *restHandler) ttl(runtime.Object) int64 {
	if h.res.GVR.Resource == "events" {
		return int64(h.s.cfg.EventTTL / time.Second)
	}
	return 0
}

// updateWith runs an update or patch: mutate turns the current object
// into the requested one. Kubernetes' rules for the main resource, the
// status subresource or one of the resource's ObjectSubresources apply,
// and the write is a compare-and-swap on the stored revision, retried
// when another writer got in between.
func (h *restHandler) updateWith(ctx context.Context, r *http.Request, info requestInfo, allowCreate bool, mutate func(current runtime.Object) (runtime.Object, error)) (runtime.Object, bool, error) {
	created := false
	var dry runtime.Object
	// An apply has merged the managedFields already.
	track := !isApply(r)
	hook := h.beginUpdate(ctx, dryRun(r))
	out, err := h.store.GuaranteedUpdate(ctx, h.key(info.Namespace, info.Name), nil, func(current runtime.Object) (runtime.Object, error) {
		// The store hands an empty object when none is stored yet.
		exists := current != nil && resourceVersionOf(current) != ""
		if !exists {
			if !allowCreate {
				return nil, apierrors.NewNotFound(h.res.GVR.GroupResource(), info.Name)
			}
			current = h.res.New()
		}
		obj, err := mutate(current.DeepCopyObject())
		if err != nil {
			return nil, err
		}
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		if m.GetName() != info.Name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), info.Name))
		}
		if !exists {
			created = true
			m.SetResourceVersion("")
			if obj, err = h.admitNew(ctx, r, info.Namespace, info.Subresource, obj, track); err != nil {
				return nil, err
			}
		} else {
			cm, _ := metaOf(current)
			if rv := m.GetResourceVersion(); rv != "" && rv != cm.GetResourceVersion() {
				return nil, apierrors.NewConflict(h.res.GVR.GroupResource(), info.Name,
					fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
			}
			requested := m.GetManagedFields()
			h.res.Strategy.Default(obj)
			validate := h.res.Strategy.ValidateUpdate
			sub, objectSub := h.res.ObjectSubresource(info.Subresource)
			switch {
			case info.Subresource == "status":
				h.res.Strategy.PrepareStatusForUpdate(ctx, obj, current)
			case objectSub:
				sub.Strategy.PrepareForUpdate(ctx, obj, current)
				validate = sub.Strategy.ValidateUpdate
			default:
				h.res.Strategy.PrepareForUpdate(ctx, obj, current)
				if err := h.s.admitTokenSecret(ctx, obj, false); err != nil {
					return nil, err
				}
			}
			// Only the main resource moves generation: a status write that
			// also changes a deployment's annotations does not.
			specChanged := info.Subresource != "status" && h.res.Strategy.SpecChanged(obj, current)
			if err := beforeUpdate(obj, current, info.Namespace, h.res, specChanged); err != nil {
				return nil, err
			}
			m.SetResourceVersion(cm.GetResourceVersion())
			// The field manager decides from the request's managedFields
			// (empty resets them, none keeps the stored ones) and what
			// the write changed, after the strategy dropped what it may
			// not change.
			m.SetManagedFields(requested)
			if track {
				obj = h.trackUpdate(r, info.Subresource, current, obj)
				m, _ = metaOf(obj)
			}
			if errs := validate(ctx, obj, current); len(errs) > 0 {
				return nil, invalid(h.res, info.Name, errs)
			}
			if err := h.admitRBAC(ctx, obj, current); err != nil {
				return nil, err
			}
			if err := hook.admit(obj, current); err != nil {
				return nil, err
			}
		}
		if dryRun(r) {
			dry = obj
			return nil, errDryRun
		}
		return obj, nil
	}, allowCreate)
	hook.finish(out, err)
	if err == errDryRun {
		return dry, created, nil
	}
	if err != nil {
		return nil, false, err
	}
	out, err = h.deleteIfFinalized(ctx, out)
	return out, created, err
}

// deleteIfFinalized removes an object marked for deletion once its last
// finalizer is gone and no grace period is running, as Kubernetes does.
func (h *restHandler) deleteIfFinalized(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	m, err := metaOf(obj)
	if err != nil || m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 || !specFinalized(obj) {
		return obj, err
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		return obj, nil
	}
	rv := m.GetResourceVersion()
	deleted, err := h.store.Delete(ctx, h.key(m.GetNamespace(), m.GetName()), &metav1.Preconditions{ResourceVersion: &rv}, nil)
	h.afterDelete(ctx, deleted, err)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return obj, nil // someone else changed or removed it meanwhile
	}
	return deleted, err
}

var errDryRun = fmt.Errorf("apiserver: dry run")

func (h *restHandler) update(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if err := checkFieldManager(r, "UpdateOptions"); err != nil {
		return err
	}
	body, err := h.readBody(r)
	if err != nil {
		return err
	}
	obj := h.res.New()
	if err := decodeBody(r, body, obj, strictFields(r)); err != nil {
		return err
	}
	allowCreate := info.Subresource == "" && (h.res.GVR.Resource == "leases" || h.res.GVR.Resource == "endpoints")
	out, created, err := h.updateWith(r.Context(), r, info, allowCreate, func(runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		return err
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	return h.respond(w, r, code, out)
}

func (h *restHandler) patch(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	body, err := h.readBody(r)
	if err != nil {
		return err
	}
	if isApply(r) {
		return h.apply(w, r, info, body)
	}
	if _, err := patchOptions(r, false); err != nil {
		return err
	}
	pt := types.PatchType(mediaTypeOnly(r.Header.Get("Content-Type")))
	out, _, err := h.updateWith(r.Context(), r, info, false, func(current runtime.Object) (runtime.Object, error) {
		currentJSON, err := jsonMarshal(current)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := applyPatch(pt, currentJSON, body, h.res.New())
		if err != nil {
			return nil, err
		}
		obj := h.res.New()
		pr := r.Clone(r.Context())
		pr.Header.Set("Content-Type", mediaJSON)
		if err := decodeBody(pr, patched, obj, strictFields(r)); err != nil {
			return nil, err
		}
		return obj, nil
	})
	if err != nil {
		return err
	}
	return h.respond(w, r, http.StatusOK, out)
}

func mediaTypeOnly(ct string) string {
	for i, c := range ct {
		if c == ';' {
			return ct[:i]
		}
	}
	return ct
}

func resourceVersionOf(obj runtime.Object) string {
	m, err := metaOf(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
