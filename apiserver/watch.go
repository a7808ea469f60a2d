package apiserver

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"cairn/apiserver/storage"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	restwatch "k8s.io/client-go/rest/watch"
)

// defaultWatchTimeout bounds a watch without timeoutSeconds, randomized
// as Kubernetes does so that clients do not all reconnect at once.
const defaultWatchTimeout = 30 * time.Minute

func (h *restHandler) watch(w http.ResponseWriter, r *http.Request, info requestInfo) error {
	q := r.URL.Query()
	pred, err := h.selection(r, info)
	if err != nil {
		return err
	}
	timeout := defaultWatchTimeout + time.Duration(rand.Int64N(int64(defaultWatchTimeout)))
	if ts := q.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || n < 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", ts))
		}
		timeout = time.Duration(n) * time.Second
	}
	prefix := h.prefix(info.Namespace)
	if info.Name != "" {
		// A watch on one object is a list watch with a name selector.
		name, namePred := info.Name, pred
		pred = func(obj runtime.Object) bool {
			m, err := metaOf(obj)
			return err == nil && m.GetName() == name && namePred(obj)
		}
	}
	media := negotiateOutput(r)
	if media.as == asPartialList {
		return errNotAcceptable("a watch sends objects: ask for PartialObjectMetadata, not PartialObjectMetadataList")
	}
	info2, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), media.mediaType)
	if !ok || info2.StreamSerializer == nil {
		return apierrors.NewBadRequest("unsupported watch media type " + media.mediaType)
	}
	versioned, err := encoderFor(media.mediaType, h.res.GVR.GroupVersion())
	if err != nil {
		return err
	}
	embedded := sharedObjectEncoder{raw: info2.Serializer, versioned: versioned}
	ctx := r.Context()
	opts := storage.WatchOptions{
		ResourceVersion: q.Get("resourceVersion"),
		Predicate:       pred,
		AllowBookmarks:  isTrue(q.Get("allowWatchBookmarks")),
	}
	// Watch-list (client-go's default for informers): the current objects
	// as ADDED events, then a bookmark marking their end.
	if v := q.Get("sendInitialEvents"); v != "" {
		send := isTrue(v)
		if send && !opts.AllowBookmarks {
			return apierrors.NewBadRequest("sendInitialEvents requires allowWatchBookmarks=true")
		}
		opts.SendInitialEvents = &send
	}
	wi, err := h.store.Watch(ctx, prefix, opts)
	if err != nil {
		return err
	}
	defer wi.Stop()

	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", info2.MediaType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	framer := info2.StreamSerializer.Framer.NewFrameWriter(w)
	enc := restwatch.NewEncoder(streaming.NewEncoder(framer, info2.StreamSerializer.Serializer), embedded)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil
			}
			switch {
			case media.table() && (ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted):
				if table, err := h.table(r, ev.Object); err == nil {
					ev.Object = table
				}
			case media.as == asPartial && ev.Type != watch.Error:
				// Bookmarks too: a metadata informer reads their
				// resourceVersion and annotations through the meta scheme.
				if p, err := partialOf(ev.Object); err == nil {
					ev.Object = p
				}
			}
			if err := enc.Encode(&ev); err != nil {
				return nil
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// sharedObjectEncoder encodes watch event objects, which the watch cache
// shares between every watcher, without writing to them. A versioning
// encoder sets and restores an object's apiVersion and kind around each
// encode, which races with other watchers encoding the same object; the
// cache's objects already carry theirs, so the plain serializer does. A
// Table made for this watcher has none and takes the versioning encoder;
// PartialObjectMetadata carries its own.
type sharedObjectEncoder struct {
	raw, versioned runtime.Encoder
}

func (e sharedObjectEncoder) Encode(obj runtime.Object, w io.Writer) error {
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		return e.versioned.Encode(obj, w)
	}
	return e.raw.Encode(obj, w)
}

func (e sharedObjectEncoder) Identifier() runtime.Identifier { return e.versioned.Identifier() }
