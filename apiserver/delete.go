package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"cairn/apiserver/registry"
	"cairn/apiserver/storage"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// deleteOptions reads DeleteOptions from the body (kubectl sends one) or
// from the query.
func (h *restHandler) deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := h.readBody(r)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		if err := decodeBody(r, body, opts, false); err != nil {
			return nil, err
		}
	}
	// Query parameters override the body, as in Kubernetes; others (a
	// deletecollection's labelSelector, say) belong to the list.
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		switch p {
		case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid propagationPolicy %q: use Orphan, Background or Foreground", v))
		}
		opts.PropagationPolicy = &p
	}
	if v := q.Get("orphanDependents"); v != "" {
		b := isTrue(v)
		opts.OrphanDependents = &b
	}
	if opts.OrphanDependents != nil && opts.PropagationPolicy == nil {
		p := metav1.DeletePropagationBackground
		if *opts.OrphanDependents {
			p = metav1.DeletePropagationOrphan
		}
		opts.PropagationPolicy = &p
	}
	return opts, nil
}

func (h *restHandler) delete(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	opts, err := h.deleteOptions(r)
	if err != nil {
		return err
	}
	out, err := h.deleteOne(r, info.Namespace, info.Name, opts)
	if err != nil {
		return err
	}
	return h.respond(w, r, http.StatusOK, out)
}

// deleteOne deletes an object, or only marks it (deletionTimestamp) while
// finalizers remain or, for a scheduled pod, while its grace period runs.
// A namespace is also marked Terminating, and its spec.finalizers hold it
// like metadata.finalizers do.
func (h *restHandler) deleteOne(r *http.Request, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, error) {
	ctx := r.Context()
	if err := h.deletable(name); err != nil {
		return nil, err
	}
	key := h.key(namespace, name)
	policy := h.propagationPolicy(opts)
	for attempt := 0; ; attempt++ {
		var gone bool
		marked, err := h.store.GuaranteedUpdate(ctx, key, opts.Preconditions, func(current runtime.Object) (runtime.Object, error) {
			// The update may judge a cached copy first and then the stored
			// object: each judgement starts afresh.
			gone = false
			if current == nil {
				return nil, apierrors.NewNotFound(h.res.GVR.GroupResource(), name)
			}
			obj := current.DeepCopyObject()
			m, _ := metaOf(obj)
			grace := h.gracePeriod(obj, opts)
			switch policy {
			case metav1.DeletePropagationForeground:
				addFinalizer(m, metav1.FinalizerDeleteDependents)
			case metav1.DeletePropagationOrphan:
				addFinalizer(m, metav1.FinalizerOrphanDependents)
			}
			if len(m.GetFinalizers()) == 0 && specFinalized(obj) && grace == 0 {
				gone = true
				return nil, errDeleteNow
			}
			if m.GetDeletionTimestamp() == nil {
				now := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
				m.SetDeletionTimestamp(&now)
				m.SetDeletionGracePeriodSeconds(&grace)
			} else if g := m.GetDeletionGracePeriodSeconds(); g == nil || grace < *g {
				// A shorter grace period may be asked for later (kubectl delete --now).
				m.SetDeletionGracePeriodSeconds(&grace)
			}
			markTerminating(obj)
			if dryRun(r) {
				return nil, errDryRun
			}
			return obj, nil
		}, false)
		if err == errDryRun {
			return h.store.Get(ctx, key, storage.GetOptions{})
		}
		if err != nil && !gone {
			return nil, err
		}
		if !gone {
			return marked, nil
		}
		if dryRun(r) {
			return h.store.Get(ctx, key, storage.GetOptions{})
		}
		// The store deletes only the object judged here; if it has changed
		// since (a finalizer added meanwhile), judge again.
		deleted, err := h.store.Delete(ctx, key, opts.Preconditions, func(current runtime.Object) error {
			m, err := metaOf(current)
			if err != nil {
				return err
			}
			if len(m.GetFinalizers()) > 0 || !specFinalized(current) || h.gracePeriod(current, opts) != 0 {
				return errJudgeAgain
			}
			return nil
		})
		if err == errJudgeAgain && attempt < 5 {
			continue
		}
		if err == errJudgeAgain {
			return nil, apierrors.NewConflict(h.res.GVR.GroupResource(), name, errors.New("the object kept changing while being deleted; try again"))
		}
		h.afterDelete(ctx, deleted, err)
		return deleted, err
	}
}

// propagationPolicy is the request's, or the resource's default:
// Background, except batch/v1 Jobs, whose pods Kubernetes orphans unless
// asked otherwise (kubectl always asks for Background).
func (h *restHandler) propagationPolicy(opts *metav1.DeleteOptions) metav1.DeletionPropagation {
	if opts.PropagationPolicy != nil {
		return *opts.PropagationPolicy
	}
	if h.res.GVR.Group == "batch" && h.res.GVR.Resource == "jobs" {
		return metav1.DeletePropagationOrphan
	}
	return metav1.DeletePropagationBackground
}

// errJudgeAgain: the object changed between judging it deletable and
// deleting it.
var errJudgeAgain = errors.New("apiserver: judge the deletion again")

// errDeleteNow stops the marking update: the object goes at once.
var errDeleteNow = errors.New("apiserver: delete now")

func addFinalizer(m metav1.Object, f string) {
	for _, x := range m.GetFinalizers() {
		if x == f {
			return
		}
	}
	m.SetFinalizers(append(m.GetFinalizers(), f))
}

// gracePeriod is how long a pod may take to stop: the request's value,
// else the pod's terminationGracePeriodSeconds; zero for pods that never
// reached a node and for every other kind of object.
func (h *restHandler) gracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		if *opts.GracePeriodSeconds < 0 {
			return 1
		}
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// collectionDeletable reports whether r serves deletecollection: every
// resource but namespaces, as in Kubernetes, where emptying the cluster
// of namespaces with one request would be too easy a mistake.
func collectionDeletable(r *registry.Resource) bool {
	return r.GVR != corev1.SchemeGroupVersion.WithResource("namespaces")
}

func (h *restHandler) deleteCollection(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if !collectionDeletable(h.res) {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), "deletecollection")
	}
	opts, err := h.deleteOptions(r)
	if err != nil {
		return err
	}
	pred, err := h.selection(r, info)
	if err != nil {
		return err
	}
	list, err := h.store.List(r.Context(), h.prefix(info.Namespace), storage.ListOptions{Predicate: pred})
	if err != nil {
		return err
	}
	items, err := metaItems(list)
	if err != nil {
		return err
	}
	// Several deletes at once, as Kubernetes does: each is a round trip
	// through Raft.
	const workers = 16
	work := make(chan metav1.Object)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range work {
				if _, err := h.deleteOne(r, m.GetNamespace(), m.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, m := range items {
		work <- m
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return h.respond(w, r, http.StatusOK, list)
}

func metaItems(list runtime.Object) ([]metav1.Object, error) {
	objs, err := extractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		m, err := metaOf(o)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
