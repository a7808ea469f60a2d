package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// GetOptions selects how fresh a Get must be.
type GetOptions struct {
	// ResourceVersion: "" reads the store (linearizable); "0" the watch
	// cache, however fresh; "N" the cache once it has reached N, else the
	// store.
	ResourceVersion string
}

// Create stores obj at key if nothing is there. obj must not carry a
// resourceVersion. ttlSeconds > 0 attaches a lease so the store deletes the
// object after about that long (Kubernetes' --event-ttl). It returns obj
// with the creation's resourceVersion; 409 AlreadyExists if key exists.
func (s *Store) Create(ctx context.Context, key string, obj runtime.Object, ttlSeconds int64) (runtime.Object, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("storage: %v", err)
	}
	if a.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	data, err := s.codec.Encode(obj)
	if err != nil {
		return nil, err
	}
	// One retry covers a reused lease that expired meanwhile.
	for attempt := 0; ; attempt++ {
		var opts []clientv3.OpOption
		var lease clientv3.LeaseID
		if ttlSeconds > 0 {
			if lease, err = s.leases.get(ctx, ttlSeconds); err != nil {
				return nil, err
			}
			opts = append(opts, clientv3.WithLease(lease))
		}
		ft := newFencedTxn(ctx)
		then := []clientv3.Op{clientv3.OpPut(key, string(data), opts...)}
		if op, ok := s.sideFence(obj); ok {
			then = append(then, op)
		}
		resp, err := s.b.KV.Txn(ctx).
			If(ft.compares(clientv3.Compare(clientv3.ModRevision(key), "=", 0))...).
			Then(then...).
			Else(ft.elseOps()...).
			Commit()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && attempt == 0 {
			s.leases.forget(lease)
			continue
		}
		if err != nil {
			return nil, storeError(err)
		}
		if err := ft.check(resp); err != nil {
			return nil, err
		}
		if !resp.Succeeded {
			return nil, apierrors.NewAlreadyExists(s.opts.Resource, nameOf(key))
		}
		setResourceVersion(obj, resp.Header.Revision)
		obj.GetObjectKind().SetGroupVersionKind(s.codec.gvk)
		return obj, nil
	}
}

// Get returns the object at key; 404 NotFound if there is none.
func (s *Store) Get(ctx context.Context, key string, opts GetOptions) (runtime.Object, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if opts.ResourceVersion != "" && s.cache.isReady() &&
		(rv == 0 || s.cache.waitFresh(ctx, rv, s.opts.FreshnessTimeout, s.requestProgress)) {
		obj, _, ok := s.cache.get(key)
		if !ok {
			return nil, apierrors.NewNotFound(s.opts.Resource, nameOf(key))
		}
		return shallowCopy(obj), nil
	}
	resp, err := s.b.KV.Get(ctx, key)
	if err != nil {
		return nil, storeError(err)
	}
	if rv > resp.Header.Revision {
		return nil, newTooLargeResourceVersionError(rv, resp.Header.Revision)
	}
	if len(resp.Kvs) == 0 {
		return nil, apierrors.NewNotFound(s.opts.Resource, nameOf(key))
	}
	obj, err := s.codec.Decode(resp.Kvs[0].Value)
	if err != nil {
		return nil, err
	}
	setResourceVersion(obj, resp.Kvs[0].ModRevision)
	return obj, nil
}

// state is an object as last read from the store.
type state struct {
	exists bool
	obj    runtime.Object // a fresh copy, at its resourceVersion
	data   []byte
	rev    int64 // mod revision; 0 when the key does not exist
}

// cachedState returns the watch cache's copy of the object at key, if the
// cache is synced and holds it. A missing object is not trusted: the cache
// may not have seen its creation yet.
func (s *Store) cachedState(key string) (state, bool) {
	if !s.cache.isReady() {
		return state{}, false
	}
	obj, _, ok := s.cache.get(key)
	if !ok {
		return state{}, false
	}
	cp := obj.DeepCopyObject()
	a, err := meta.Accessor(cp)
	if err != nil {
		return state{}, false
	}
	rev, err := strconv.ParseInt(a.GetResourceVersion(), 10, 64)
	if err != nil || rev == 0 {
		return state{}, false
	}
	setResourceVersion(cp, 0)
	data, err := s.codec.Encode(cp)
	if err != nil {
		return state{}, false
	}
	setResourceVersion(cp, rev)
	return state{exists: true, obj: cp, data: data, rev: rev}, true
}

func (s *Store) readState(ctx context.Context, key string) (state, error) {
	resp, err := s.b.KV.Get(ctx, key)
	if err != nil {
		return state{}, storeError(err)
	}
	return s.stateOf(resp.Kvs)
}

func (s *Store) stateOf(kvs []*mvccpb.KeyValue) (state, error) {
	if len(kvs) == 0 {
		return state{}, nil
	}
	obj, err := s.codec.Decode(kvs[0].Value)
	if err != nil {
		return state{}, err
	}
	setResourceVersion(obj, kvs[0].ModRevision)
	return state{exists: true, obj: obj, data: kvs[0].Value, rev: kvs[0].ModRevision}, nil
}

// GuaranteedUpdate applies tryUpdate to the current object at key and
// stores the result, with optimistic concurrency: the write succeeds only
// if the object has not changed since it was read, otherwise tryUpdate
// runs again on the newer state. tryUpdate gets its own copy, which it may
// modify and return. A precondition whose resourceVersion is not the
// object's gets 409 Conflict with Kubernetes' optimistic-lock message, as
// an update with a stale resourceVersion does. A missing object is 404
// NotFound unless ignoreNotFound, in which case tryUpdate gets an empty
// object and may create it (update-as-create, apply). If the result
// encodes to the bytes already stored nothing is written and the current
// object is returned. A leased object keeps its lease.
func (s *Store) GuaranteedUpdate(ctx context.Context, key string, precond *metav1.Preconditions,
	tryUpdate func(current runtime.Object) (runtime.Object, error), ignoreNotFound bool) (runtime.Object, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	// Start from the watch cache's copy, as Kubernetes does: the
	// compare-and-swap below catches a stale one, and its failure branch
	// returns the current state. This spares a linearizable read, which on
	// a follower waits for the commit index to arrive.
	st, fromCache := s.cachedState(key)
	if !fromCache {
		var err error
		if st, err = s.readState(ctx, key); err != nil {
			return nil, err
		}
	}
	for {
		if !st.exists && !ignoreNotFound {
			return nil, apierrors.NewNotFound(s.opts.Resource, nameOf(key))
		}
		current := st.obj
		var err error
		if !st.exists {
			current = s.newFunc()
		} else {
			err = s.checkUpdatePreconditions(key, precond, current)
		}
		var out runtime.Object
		if err == nil {
			out, err = tryUpdate(current)
		}
		if err != nil {
			if fromCache {
				// The verdict may rest on a stale copy (a client that just
				// wrote holds a newer resourceVersion): judge the stored
				// object before answering.
				fromCache = false
				if st, err = s.readState(ctx, key); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		setResourceVersion(out, 0)
		data, err := s.codec.Encode(out)
		if err != nil {
			return nil, err
		}
		out.GetObjectKind().SetGroupVersionKind(s.codec.gvk)
		if st.exists && bytes.Equal(data, st.data) {
			if fromCache {
				// "Nothing to write" must hold for the stored object,
				// not for a possibly stale copy.
				fromCache = false
				if st, err = s.readState(ctx, key); err != nil {
					return nil, err
				}
				continue
			}
			setResourceVersion(out, st.rev)
			return out, nil
		}
		put := clientv3.OpPut(key, string(data))
		if st.exists {
			put = clientv3.OpPut(key, string(data), clientv3.WithIgnoreLease())
		}
		then := []clientv3.Op{put}
		if op, ok := s.sideFence(out); ok {
			then = append(then, op)
		}
		ft := newFencedTxn(ctx)
		resp, err := s.b.KV.Txn(ctx).
			If(ft.compares(clientv3.Compare(clientv3.ModRevision(key), "=", st.rev))...).
			Then(then...).
			Else(ft.elseOps(clientv3.OpGet(key))...).
			Commit()
		if err != nil {
			return nil, storeError(err)
		}
		if err := ft.check(resp); err != nil {
			return nil, err
		}
		if resp.Succeeded {
			setResourceVersion(out, resp.Header.Revision)
			return out, nil
		}
		// Lost a race, or the cached copy was stale: retry on the state
		// the transaction saw.
		fromCache = false
		if st, err = s.stateOf(resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return nil, err
		}
	}
}

func (s *Store) checkUpdatePreconditions(key string, p *metav1.Preconditions, current runtime.Object) error {
	if p == nil {
		return nil
	}
	a, err := meta.Accessor(current)
	if err != nil {
		return fmt.Errorf("storage: %v", err)
	}
	if p.UID != nil && *p.UID != a.GetUID() {
		return uidConflict(s, key, *p.UID, a.GetUID())
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != a.GetResourceVersion() {
		return conflictOnResourceVersion(s.opts.Resource, nameOf(key))
	}
	return nil
}

func uidConflict(s *Store, key string, want, have types.UID) error {
	return apierrors.NewConflict(s.opts.Resource, nameOf(key),
		fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", want, have))
}

// Delete removes the object at key if preconditions hold and validate
// (which sees the current object; nil allows all) accepts it. It returns
// the object's last state at the deletion's resourceVersion, as the
// DELETED watch event carries it. 404 NotFound if there is none; 409
// Conflict when a precondition fails, worded as Kubernetes words it.
func (s *Store) Delete(ctx context.Context, key string, precond *metav1.Preconditions, validate func(current runtime.Object) error) (runtime.Object, error) {
	if err := s.checkKey(key); err != nil {
		return nil, err
	}
	st, err := s.readState(ctx, key)
	if err != nil {
		return nil, err
	}
	for {
		if !st.exists {
			return nil, apierrors.NewNotFound(s.opts.Resource, nameOf(key))
		}
		if err := s.checkDeletePreconditions(key, precond, st.obj); err != nil {
			return nil, err
		}
		if validate != nil {
			if err := validate(st.obj); err != nil {
				return nil, err
			}
		}
		then := []clientv3.Op{clientv3.OpDelete(key)}
		if op, ok := s.sideFence(st.obj); ok {
			then = append(then, clientv3.OpDelete(string(op.KeyBytes())))
		}
		ft := newFencedTxn(ctx)
		resp, err := s.b.KV.Txn(ctx).
			If(ft.compares(clientv3.Compare(clientv3.ModRevision(key), "=", st.rev))...).
			Then(then...).
			Else(ft.elseOps(clientv3.OpGet(key))...).
			Commit()
		if err != nil {
			return nil, storeError(err)
		}
		if err := ft.check(resp); err != nil {
			return nil, err
		}
		if resp.Succeeded {
			setResourceVersion(st.obj, resp.Header.Revision)
			return st.obj, nil
		}
		if st, err = s.stateOf(resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return nil, err
		}
	}
}

func (s *Store) checkDeletePreconditions(key string, p *metav1.Preconditions, current runtime.Object) error {
	if p == nil {
		return nil
	}
	a, err := meta.Accessor(current)
	if err != nil {
		return fmt.Errorf("storage: %v", err)
	}
	if p.UID != nil && *p.UID != a.GetUID() {
		return uidConflict(s, key, *p.UID, a.GetUID())
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != a.GetResourceVersion() {
		return apierrors.NewConflict(s.opts.Resource, nameOf(key),
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, a.GetResourceVersion()))
	}
	return nil
}

// storeError turns a store client error into an API error.
func storeError(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	case errors.Is(err, rpctypes.ErrFutureRev):
		return newTooLargeResourceVersionError(0, 0)
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("storage: the store did not answer in time", 1)
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, rpctypes.ErrNoLeader):
		// Nothing was proposed: the client may safely retry soon
		// (client-go does, honouring Retry-After).
		se := apierrors.NewServiceUnavailable("storage: the store has no leader; retry: " + err.Error())
		se.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		return se
	case errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail):
		// The write may or may not have been applied: no Retry-After, so
		// that clients do not blindly repeat a create (with generateName,
		// a second object); they re-read and decide, as after a conflict.
		return apierrors.NewServiceUnavailable("storage: the store changed leader; the write's outcome is unknown, read the object before retrying: " + err.Error())
	}
	return apierrors.NewInternalError(fmt.Errorf("storage: %w", err))
}
