package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ListOptions selects a List's objects and freshness, with Kubernetes'
// semantics.
type ListOptions struct {
	// ResourceVersion and ResourceVersionMatch:
	//   "" (no match): a consistent read, as fresh as the store;
	//   "0": whatever the watch cache holds;
	//   "N" (NotOlderThan, the default): the cache once it has reached N,
	//     else the store;
	//   "N" Exact: the store as it was at N, 410 Gone if compacted.
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	// Limit caps the items returned (0: all); when more remain the list's
	// continue token reads the next page at the same revision.
	Limit int64
	// Continue is a token from a previous page; ResourceVersion must be
	// empty. 410 Gone when its revision has been compacted.
	Continue string
	// Predicate filters items; Limit counts matching items only.
	Predicate Predicate
}

// listResult is one page of a list, before it becomes the list object.
type listResult struct {
	items     []runtime.Object
	rev       int64
	lastKey   string // the key of the last item returned, when more remain
	more      bool
	remaining int64 // items left after this page, when known (-1 if not)
}

// List returns keyPrefix's objects (a range when it ends with "/", else
// one key) as the resource's list type, with ListMeta's resourceVersion,
// continue and remainingItemCount set.
func (s *Store) List(ctx context.Context, keyPrefix string, opts ListOptions) (runtime.Object, error) {
	if err := s.checkPrefix(keyPrefix); err != nil {
		return nil, err
	}
	if err := validateListOptions(opts); err != nil {
		return nil, err
	}
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	res, err := s.list(ctx, keyPrefix, rv, opts)
	if err != nil {
		return nil, err
	}
	return s.listObject(keyPrefix, res)
}

func validateListOptions(o ListOptions) error {
	switch {
	case o.Continue != "" && o.ResourceVersion != "":
		return apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	case o.Continue != "" && o.ResourceVersionMatch != "":
		return apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
	case o.ResourceVersionMatch != "" && o.ResourceVersion == "":
		return apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
	case o.ResourceVersionMatch == metav1.ResourceVersionMatchExact && o.ResourceVersion == "0":
		return apierrors.NewBadRequest("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")
	case o.ResourceVersionMatch != "" && o.ResourceVersionMatch != metav1.ResourceVersionMatchExact &&
		o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan:
		return apierrors.NewBadRequest(fmt.Sprintf("unknown resourceVersionMatch %q", o.ResourceVersionMatch))
	case o.Limit < 0:
		return apierrors.NewBadRequest("limit must not be negative")
	}
	return nil
}

// list picks where a list is served from.
func (s *Store) list(ctx context.Context, keyPrefix string, rv int64, opts ListOptions) (listResult, error) {
	start, _ := keyRange(keyPrefix)
	switch {
	case opts.Continue != "":
		rev, from, err := decodeContinue(opts.Continue, keyPrefix)
		if err != nil {
			return listResult{}, err
		}
		if snap, ok := s.cache.snapshotAt(rev); ok {
			return listSnapshot(snap, rev, keyPrefix, from, opts), nil
		}
		res, err := s.listStore(ctx, keyPrefix, from, rev, opts)
		if errors.Is(err, rpctypes.ErrCompacted) {
			return listResult{}, errContinueExpired()
		}
		return res, s.listError(ctx, err, rev)
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		res, err := s.listStore(ctx, keyPrefix, start, rv, opts)
		return res, s.listError(ctx, err, rv)
	case opts.ResourceVersion == "":
		// Consistent: from the cache once it has caught up with the store's
		// current revision, which saves decoding every object again.
		if cur, err := s.currentRevision(ctx); err == nil && s.cache.isReady() &&
			s.cache.waitFresh(ctx, cur, s.opts.FreshnessTimeout, s.requestProgress) {
			if snap, rev, ok := s.cache.snapshot(); ok && rev >= cur {
				return listSnapshot(snap, rev, keyPrefix, start, opts), nil
			}
		}
	case s.cache.isReady() && (rv == 0 || s.cache.waitFresh(ctx, rv, s.opts.FreshnessTimeout, s.requestProgress)):
		if snap, rev, ok := s.cache.snapshot(); ok && rev >= rv {
			return listSnapshot(snap, rev, keyPrefix, start, opts), nil
		}
	}
	res, err := s.listStore(ctx, keyPrefix, start, 0, opts)
	if err != nil {
		return res, s.listError(ctx, err, 0)
	}
	if res.rev < rv {
		return listResult{}, newTooLargeResourceVersionError(rv, res.rev)
	}
	return res, nil
}

func (s *Store) listError(ctx context.Context, err error, rev int64) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrFutureRev):
		cur, _ := s.currentRevision(ctx)
		return newTooLargeResourceVersionError(rev, cur)
	}
	return storeError(err)
}

// listSnapshot reads a page from a cache snapshot, starting at from.
func listSnapshot(snap *btree.BTreeG[*entry], rev int64, keyPrefix, from string, opts ListOptions) listResult {
	_, end := keyRange(keyPrefix)
	res := listResult{rev: rev, remaining: -1}
	if opts.Limit > 0 {
		res.items = make([]runtime.Object, 0, min(opts.Limit, int64(snap.Len())))
	}
	var counted int64
	snap.AscendRange(&entry{key: from}, &entry{key: end}, func(e *entry) bool {
		if res.more {
			counted++ // counting what remains after a full page
			return true
		}
		if opts.Limit > 0 && int64(len(res.items)) == opts.Limit {
			res.more = true
			if opts.Predicate != nil {
				return false // what remains would need matching: unknown
			}
			counted = 1
			return true
		}
		if opts.Predicate.matches(e.obj) {
			res.items = append(res.items, e.obj)
			res.lastKey = e.key
		}
		return true
	})
	if res.more && opts.Predicate == nil {
		res.remaining = counted
	}
	return res
}

// listStore reads a page from the store at rev (0: now, linearizable),
// starting at from. With a predicate it reads on until Limit items match,
// as Kubernetes does, so that a page is full unless the range is done.
func (s *Store) listStore(ctx context.Context, keyPrefix, from string, rev int64, opts ListOptions) (listResult, error) {
	_, end := keyRange(keyPrefix)
	res := listResult{rev: rev, remaining: -1}
	pageSize := opts.Limit
	key := from
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(end)}
		if pageSize > 0 {
			ops = append(ops, clientv3.WithLimit(pageSize))
		}
		if res.rev > 0 {
			ops = append(ops, clientv3.WithRev(res.rev))
		}
		resp, err := s.b.KV.Get(ctx, key, ops...)
		if err != nil {
			return listResult{}, err
		}
		if res.rev == 0 {
			res.rev = resp.Header.Revision
		}
		for i, kv := range resp.Kvs {
			obj, err := s.codec.Decode(kv.Value)
			if err != nil {
				return listResult{}, err
			}
			setResourceVersion(obj, kv.ModRevision)
			if !opts.Predicate.matches(obj) {
				continue
			}
			res.items = append(res.items, obj)
			res.lastKey = string(kv.Key)
			if opts.Limit > 0 && int64(len(res.items)) == opts.Limit {
				res.more = i < len(resp.Kvs)-1 || resp.More
				if res.more && opts.Predicate == nil {
					res.remaining = resp.Count - int64(i+1)
				}
				return res, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return res, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		// Filtering: read larger pages, up to etcd-friendly sizes.
		pageSize = min(2*pageSize, 10000)
	}
}

// listObject builds the resource's list type from a page.
func (s *Store) listObject(keyPrefix string, res listResult) (runtime.Object, error) {
	list := s.newListFunc()
	list.GetObjectKind().SetGroupVersionKind(s.listGVK)
	if err := meta.SetList(list, res.items); err != nil {
		return nil, fmt.Errorf("storage: %v", err)
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("storage: %v", err)
	}
	la.SetResourceVersion(fmt.Sprint(res.rev))
	if res.more && strings.HasSuffix(keyPrefix, "/") {
		token, err := encodeContinue(keyPrefix, res.lastKey, res.rev)
		if err != nil {
			return nil, err
		}
		la.SetContinue(token)
		if res.remaining >= 0 {
			n := res.remaining
			la.SetRemainingItemCount(&n)
		}
	}
	return list, nil
}
