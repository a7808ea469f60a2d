package storage

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// Backend is how a Store reaches the key-value store: the in-process
// clients of a co-located raftstore replica (clientv3.NewKVFromKVClient
// and friends) or a clientv3.Client of a standalone API server.
type Backend struct {
	KV      clientv3.KV
	Watcher clientv3.Watcher
	// Lease is needed only by resources created with a TTL (events).
	Lease clientv3.Lease
}

// Defaults of StoreOptions.
const (
	DefaultWatchWindow      = 10000
	DefaultWatchChanSize    = 256
	DefaultBookmarkInterval = time.Minute
	DefaultFreshnessTimeout = 3 * time.Second
	DefaultRelistPageSize   = 1000
)

// StoreOptions tunes a Store; the zero value is usable.
type StoreOptions struct {
	Logger *slog.Logger
	// Scheme encodes and decodes objects; client-go's scheme by default.
	Scheme *runtime.Scheme
	// Resource names the resource in API errors (404, 409); by default the
	// prefix's last segment in the group of newFunc's kind.
	Resource schema.GroupResource
	// WatchWindow is how many events the watch cache keeps so that watches
	// resume from an older resourceVersion; older ones get 410 Gone.
	WatchWindow int
	// WatchChanSize is each watcher's buffer of events; a watcher whose
	// buffer is full is dropped rather than allowed to hold others back.
	WatchChanSize int
	// BookmarkInterval is how often watchers that allow bookmarks get one.
	BookmarkInterval time.Duration
	// FreshnessTimeout bounds how long a read waits for the watch cache to
	// reach a resourceVersion before it is served by the store instead.
	FreshnessTimeout time.Duration
	// RelistPageSize is how many keys each range read of a (re)list takes.
	RelistPageSize int64
	// FenceOf, when set, derives from an object being written a fence key
	// and token that are stored in the same transaction (a Lease's holder
	// and transitions), so that writes fenced on that leadership are
	// refused once it passes to another holder. Deleting the object
	// deletes its fence.
	FenceOf func(obj runtime.Object) (key, token string, ok bool)
}

func (o *StoreOptions) setDefaults(prefix string, codec *Codec) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Resource.Resource == "" {
		o.Resource = schema.GroupResource{Group: codec.gvk.Group, Resource: prefix[strings.LastIndex(prefix, "/")+1:]}
	}
	if o.WatchWindow <= 0 {
		o.WatchWindow = DefaultWatchWindow
	}
	if o.WatchChanSize <= 0 {
		o.WatchChanSize = DefaultWatchChanSize
	}
	if o.BookmarkInterval <= 0 {
		o.BookmarkInterval = DefaultBookmarkInterval
	}
	if o.FreshnessTimeout <= 0 {
		o.FreshnessTimeout = DefaultFreshnessTimeout
	}
	if o.RelistPageSize <= 0 {
		o.RelistPageSize = DefaultRelistPageSize
	}
}

// Store keeps the objects of one resource type under a key prefix such as
// /registry/pods, and serves reads and watches from a watch cache fed by a
// single store watch. resourceVersion is the store revision.
//
// Objects passed to Create and GuaranteedUpdate (the one tryUpdate
// returns) belong to the Store from then on: it sets their
// resourceVersion, apiVersion and kind, and returns them. Every object and
// list it returns carries apiVersion and kind (unlike Kubernetes' storage
// layer), so it can be encoded for a client as it is. Objects served from the watch cache (Get and List with a
// resourceVersion, every watch event) share memory with it and with other
// readers: Get returns a shallow copy and List items are shallow copies, so
// their top-level fields (TypeMeta) may be set, but nothing they point to
// (maps, slices, nested structs behind pointers) may be modified; watch
// event objects may not be modified at all. DeepCopyObject first to modify.
type Store struct {
	b           Backend
	prefix      string
	newFunc     func() runtime.Object
	newListFunc func() runtime.Object
	codec       *Codec
	listGVK     schema.GroupVersionKind
	opts        StoreOptions
	log         *slog.Logger
	leases      *leaseManager
	cache       *watchCache

	// kick asks the progress loop for a store progress notification now.
	kick chan struct{}

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
	// watchCtx is the context of the cache's store watch; progress
	// requests must carry the same metadata to reach the same stream.
	watchCtx context.Context
}

// NewStore returns the Store of the resource whose objects newFunc and
// newListFunc make, under prefix (e.g. "/registry/pods", no trailing
// slash). It panics if the type is not in the scheme: that is a
// programming error. Call Run to start the watch cache.
func NewStore(b Backend, prefix string, newFunc, newListFunc func() runtime.Object, opts StoreOptions) *Store {
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	codec, err := NewCodec(opts.Scheme, newFunc)
	if err != nil {
		panic(fmt.Sprintf("storage: store for %s: %v", prefix, err))
	}
	listGVKs, _, err := opts.Scheme.ObjectKinds(newListFunc())
	if err != nil {
		panic(fmt.Sprintf("storage: store for %s: %v", prefix, err))
	}
	prefix = strings.TrimSuffix(prefix, "/")
	opts.setDefaults(prefix, codec)
	s := &Store{
		b:           b,
		prefix:      prefix,
		newFunc:     newFunc,
		newListFunc: newListFunc,
		codec:       codec,
		listGVK:     listGVKs[0],
		opts:        opts,
		log:         opts.Logger.With("resource", opts.Resource.String()),
		kick:        make(chan struct{}, 1),
	}
	s.leases = newLeaseManager(b.Lease)
	s.cache = newWatchCache(opts.WatchWindow, opts.WatchChanSize)
	return s
}

// Codec returns the codec the store writes with.
func (s *Store) Codec() *Codec { return s.codec }

// Resource returns the resource named in the store's API errors.
func (s *Store) Resource() schema.GroupResource { return s.opts.Resource }

// Key returns the key of one object: prefix/namespace/name, or prefix/name
// for a cluster-scoped object (namespace "").
func (s *Store) Key(namespace, name string) string {
	if namespace == "" {
		return s.prefix + "/" + name
	}
	return s.prefix + "/" + namespace + "/" + name
}

// Prefix returns the key prefix List and Watch take for all objects of a
// namespace, or of the whole resource when namespace is "". It ends with
// "/", which is what makes List and Watch select a range of keys.
func (s *Store) Prefix(namespace string) string {
	if namespace == "" {
		return s.prefix + "/"
	}
	return s.prefix + "/" + namespace + "/"
}

// checkKey refuses keys outside this store's prefix: a caller bug that
// would otherwise read or write another resource.
func (s *Store) checkKey(key string) error {
	if !strings.HasPrefix(key, s.prefix+"/") || len(key) == len(s.prefix)+1 {
		return fmt.Errorf("storage: key %q is not under %s/", key, s.prefix)
	}
	return nil
}

// checkPrefix refuses List and Watch key prefixes outside this store's.
func (s *Store) checkPrefix(keyPrefix string) error {
	if !strings.HasPrefix(keyPrefix, s.prefix+"/") {
		return fmt.Errorf("storage: key prefix %q is not under %s/", keyPrefix, s.prefix)
	}
	return nil
}

// keyRange returns the keys List and Watch select for keyPrefix: the range
// under it when it ends with "/", else that one key.
func keyRange(keyPrefix string) (start, end string) {
	if strings.HasSuffix(keyPrefix, "/") {
		return keyPrefix, clientv3.GetPrefixRangeEnd(keyPrefix)
	}
	return keyPrefix, keyPrefix + "\x00"
}

// nameOf returns the object name at the end of a key.
func nameOf(key string) string { return key[strings.LastIndex(key, "/")+1:] }

// Run starts the watch cache in the background: one store watch for the
// whole prefix (a list, then a watch from the list's revision), resumed
// from the last revision when it breaks and rebuilt from a new list when
// that revision was compacted. It returns at once; Ready reports when the
// cache has synced, Stop ends it. Calling Run again does nothing.
func (s *Store) Run(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	// Kubernetes asks for a leader on its store watches: a replica cut off
	// from the quorum ends the watch, and the cache resumes elsewhere.
	s.watchCtx = clientv3.WithRequireLeader(ctx)
	s.done = make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.reflect(ctx) }()
	go func() { defer wg.Done(); s.progressLoop(ctx) }()
	go func() { wg.Wait(); close(s.done) }()
}

// Ready reports whether the watch cache has synced with the store.
func (s *Store) Ready() bool { return s.cache.isReady() }

// Stop ends the watch cache and every watch, and waits for them.
func (s *Store) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Count returns how many objects the watch cache holds (0 before it is
// ready), for metrics.
func (s *Store) Count() int { return s.cache.count() }

// Changes counts the changes of the watch cache: it moves whenever the
// set of objects Objects returns does, so a caller that derives state
// from them knows when to derive it again. ok is false until the cache
// is ready.
func (s *Store) Changes() (n uint64, ok bool) {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changes, c.ready
}

// Objects returns every object in the watch cache, shared read-only:
// callers must not change them. changes is Changes at that moment.
func (s *Store) Objects() (objs []runtime.Object, changes uint64, ok bool) {
	c := s.cache
	c.mu.Lock()
	tree, changes, ready := c.tree.Clone(), c.changes, c.ready
	c.mu.Unlock()
	if !ready {
		return nil, 0, false
	}
	objs = make([]runtime.Object, 0, tree.Len())
	tree.Ascend(func(e *entry) bool {
		objs = append(objs, e.obj)
		return true
	})
	return objs, changes, true
}
