package apiserver

import (
	"net/http"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serveEviction serves POST pods/{name}/eviction, which `kubectl drain`
// uses: the pod is deleted gracefully, with the eviction's DeleteOptions
// (grace period, preconditions, dry run).
//
// PodDisruptionBudgets are not served yet, so no budget is checked and an
// eviction is never refused with 429; once they are, the check belongs
// here, before the delete.
func serveEviction(h *restHandler, w http.ResponseWriter, r *http.Request, info requestInfo) error {
	if info.Verb != "create" {
		return apierrors.NewMethodNotSupported(h.res.GVR.GroupResource(), info.Verb+" eviction")
	}
	body, err := h.readBody(r)
	if err != nil {
		return err
	}
	ev := &policyv1.Eviction{}
	if err := decodeBody(r, body, ev, strictFields(r)); err != nil {
		return err
	}
	if ev.Name != info.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if ev.Namespace != "" && ev.Namespace != info.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if containsAll(opts.DryRun) && !dryRun(r) {
		r = withDryRun(r)
	}
	if _, err := h.deleteOne(r, info.Namespace, info.Name, opts); err != nil {
		return err
	}
	return h.respondSuccess(w, r)
}

func containsAll(dry []string) bool {
	for _, v := range dry {
		if v == metav1.DryRunAll {
			return true
		}
	}
	return false
}

// withDryRun marks r as a dry run, for deleteOne, which reads it from the
// query.
func withDryRun(r *http.Request) *http.Request {
	r = r.Clone(r.Context())
	q := r.URL.Query()
	q.Add("dryRun", metav1.DryRunAll)
	r.URL.RawQuery = q.Encode()
	return r
}
