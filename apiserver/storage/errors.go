package storage

import (
	"errors"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OptimisticLockErrorMsg is the message of the 409 Conflict a write based
// on a stale resourceVersion gets; clients such as kubectl recognise it.
const OptimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// ErrWatcherTooSlow is why a watch that did not keep up with events was
// ended; its client should watch again from the last resourceVersion it saw.
var ErrWatcherTooSlow = errors.New("storage: watcher too slow: its buffer of events filled up")

// errRelisted ends watches when the cache had to rebuild itself from a new
// list: their clients resume from their last resourceVersion, and get 410
// Gone if that is older than the rebuilt cache's history.
var errRelisted = errors.New("storage: watch cache re-listed after the store compacted its history")

// errStopped ends watches when the store is stopped.
var errStopped = errors.New("storage: store stopped")

// newTooLargeResourceVersionError is the 504 Kubernetes returns when a
// client asks for a resourceVersion the store has not reached; client-go
// recognises it by its cause and retries.
func newTooLargeResourceVersionError(want, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// newTooOldResourceVersionError is the 410 Gone for a resourceVersion whose
// history is gone.
func newTooOldResourceVersionError(want, oldest int64) *apierrors.StatusError {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", want, oldest))
}

// errContinueExpired is the 410 Gone for a continue token whose revision
// has been compacted.
func errContinueExpired() error {
	return apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. Start a new list without the continue parameter.")
}

// parseResourceVersion parses a resourceVersion a client sent; "" is 0.
func parseResourceVersion(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// conflictOnResourceVersion is the 409 a write gets when its precondition
// resourceVersion is not the object's.
func conflictOnResourceVersion(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, errors.New(OptimisticLockErrorMsg))
}
